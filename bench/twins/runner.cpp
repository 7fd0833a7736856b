// The Rust-tax runner: launches each Rust kernel (the project's PTX) and its CUDA C twin
// (bench/twins/*.cu) on the same buffers with the same arguments and launch shape, checks
// that they agree, and times both with CUDA events, interleaved. Driver API only.
//
//   runner <project.ptx> <twins.cubin|twins.ptx> [--quick] [--json out.json] [--runs N] [--only a,b]
//          [--hopper <kernels_sm90a.ptx> <twins_sm90a.cubin|.ptx>]
//   runner <project.ptx> <twins.ptx> --signatures [--launches launches.txt] [--sms N]
//
// --hopper adds the Hopper module (wgmma, TMA) and its twins, both for sm_90a, which run on a
// GPU of compute capability 9.0 only (and need a CUDA 12 cuda.h to build the tensor maps).
//
// --signatures needs no GPU: it checks each kernel's entries and parameters and, given the
// host's launch shapes (`host launches --sms N > launches.txt`, the same N), each case's grid,
// block and shared memory at the full sizes. Block, tile and shared sizes come from interface.h,
// which is generated from the Rust side's interface crate.
//
// Exit status: 0 all cross-checks passed; 1 a check failed, a kernel was missing or had
// another signature or launch shape, or a CUDA call failed; 2 no usable GPU.

#include "interface.h"

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "interface.h"

namespace {

// --signatures: no GPU, no allocation, no input data; the kernels' presence, parameters and
// launch shapes are checked.
bool g_dry = false;

struct CudaError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string error_text(CUresult r) {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS) name = "CUDA_ERROR_?";
    if (cuGetErrorString(r, &text) != CUDA_SUCCESS) text = "unknown error";
    return std::string(name) + " (" + text + ")";
}

void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw CudaError(std::string(what) + ": " + error_text(r));
}
#define CK(call) check((call), #call)

struct DeviceBuffer {
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
    explicit DeviceBuffer(size_t n) : bytes(n) {
        if (!g_dry) CK(cuMemAlloc(&ptr, n));
    }
    ~DeviceBuffer() {
        if (ptr) cuMemFree(ptr);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};
using Buffer = std::shared_ptr<DeviceBuffer>;
Buffer device(size_t bytes) { return std::make_shared<DeviceBuffer>(bytes); }
template <class T>
Buffer upload(const std::vector<T>& host) {
    Buffer b = device(host.size() * sizeof(T));
    if (!g_dry) CK(cuMemcpyHtoD(b->ptr, host.data(), b->bytes));
    return b;
}

// x rounded to TF32 as cvt.rna.tf32.f32 rounds (to nearest, ties away from zero; finite x), as
// host/src/ops/matmul/tensor.rs rounds it.
float round_tf32(float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bits = (bits + 0x1000) & ~0x1fffu;
    std::memcpy(&x, &bits, 4);
    return x;
}

// Kernel parameters by value, as cuLaunchKernel wants them: one pointer per parameter.
struct Args {
    unsigned char storage[16][8];
    size_t sizes[16];
    void* ptrs[16];
    int count = 0;
    template <class T>
    Args& add(T v) {
        static_assert(sizeof(T) <= 8, "parameters of at most 8 bytes");
        std::memcpy(storage[count], &v, sizeof v);
        sizes[count++] = sizeof v;
        return *this;
    }
    // A Rust slice is two parameters: its pointer, then its length.
    Args& slice(const Buffer& b, size_t len) { return add<CUdeviceptr>(b->ptr).add<size_t>(len); }
    Args& ptr(const Buffer& b) { return add<CUdeviceptr>(b->ptr); }
    void** params() {
        for (int i = 0; i < count; ++i) ptrs[i] = storage[i];
        return ptrs;
    }
    std::vector<size_t> layout() const { return std::vector<size_t>(sizes, sizes + count); }
};

struct Shape {
    unsigned gx, gy, bx, by, shared;
    unsigned gz = 1;  // the layers of a split-k grid
};

// A launch as `host launches` prints it: grid and block in three dimensions, dynamic shared bytes.
struct Launch {
    unsigned grid[3], block[3], shared;
};

Launch launch_of(const Shape& s) { return {{s.gx, s.gy, s.gz}, {s.bx, s.by, 1}, s.shared}; }

std::string describe(const Launch& l) {
    auto dims = [](const unsigned* d) {
        return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
    };
    return "grid " + dims(l.grid) + " block " + dims(l.block) + " shared " + std::to_string(l.shared);
}

bool same_block(const Launch& a, const Launch& b) {
    return std::equal(a.block, a.block + 3, b.block) && a.shared == b.shared;
}

bool same(const Launch& a, const Launch& b) { return same_block(a, b) && std::equal(a.grid, a.grid + 3, b.grid); }

unsigned blocks(size_t n, size_t per) { return (unsigned)((n + per - 1) / per); }
Shape linear(size_t n, unsigned block) { return {blocks(n, block), 1, block, 1, 0}; }

// Reference: the two kernels may rightly differ (which of racing equal joins wins, the order
// of f64 atomic adds); the CPU reference judges each result alone.
enum class Compare { Exact, Close, Racy, Reference };

struct Case {
    std::string kernel, size;
    Shape shape{};
    Args args;
    std::string unit;  // "GB/s", "GFLOP/s" or "Gop/s"
    double work = 0;   // bytes, flops or operations per launch
    std::function<void(CUstream)> reset;  // before every launch, outside timing
    std::function<void()> setup;          // once before the case (e.g. the filter)
    Buffer out;                           // the result compared between the two kernels
    Compare compare = Compare::Exact;
    double tolerance = 0;                 // absolute, for Compare::Close
    unsigned racy_threads = 0;
    bool hopper = false;  // in the Hopper modules (sm_90a) rather than the main ones
    // CPU spot check of one kernel's result: "" when it holds, else what is wrong.
    std::function<std::string(const std::vector<unsigned char>&)> reference;
};

struct Row {
    std::string kernel, size, unit, check, detail;
    double rust_ms = NAN, rust_min = NAN, c_ms = NAN, c_min = NAN, work = 0;
    int rust_regs = -1, c_regs = -1;
    bool passed = false;
};

// ---- seeded inputs, generated in fixed chunks so the data do not depend on the thread count

const size_t kChunk = 1 << 20;

uint64_t splitmix(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

template <class T, class F>
std::vector<T> generate(size_t n, uint64_t seed, F draw) {
    if (g_dry) return {};  // nothing is launched, so nothing is drawn
    std::vector<T> v(n);
    size_t chunks = (n + kChunk - 1) / kChunk;
    unsigned workers = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w) {
        pool.emplace_back([&, w] {
            for (size_t c = w; c < chunks; c += workers) {
                uint64_t s = seed ^ (c * 0xD1B54A32D192ED03ull);
                size_t end = std::min(n, (c + 1) * kChunk);
                for (size_t i = c * kChunk; i < end; ++i) v[i] = draw(s);
            }
        });
    }
    for (auto& t : pool) t.join();
    return v;
}

std::vector<float> random_f32(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    return generate<float>(n, seed, [=](uint64_t& s) {
        float v = (float)(lo + (double)(hi - lo) * (double)(splitmix(s) >> 40) * 0x1p-24);
        return v < hi ? v : std::nextafter(hi, lo);  // [lo, hi) even after rounding
    });
}

std::vector<unsigned> random_u32(size_t n, uint64_t seed, unsigned lo, unsigned hi) {
    return generate<unsigned>(n, seed, [=](uint64_t& s) { return lo + (unsigned)((splitmix(s) >> 32) % (hi - lo)); });
}

std::vector<size_t> sample_indices(size_t n, size_t count, uint64_t seed) {
    std::vector<size_t> idx{0, n - 1};
    uint64_t s = seed;
    while (idx.size() < count) idx.push_back(splitmix(s) % n);
    return idx;
}

// ---- PTX signature: parameter sizes of an entry, from the PTX text

size_t ptx_type_size(const std::string& decl) {
    size_t open = decl.find('[');
    if (decl.find(".b8") != std::string::npos && open != std::string::npos) return std::stoul(decl.substr(open + 1));
    static const char* const eight[] = {".u64", ".s64", ".b64", ".f64"};
    static const char* const four[] = {".u32", ".s32", ".b32", ".f32"};
    static const char* const two[] = {".u16", ".s16", ".b16", ".f16"};
    for (auto t : eight)
        if (decl.find(t) != std::string::npos) return 8;
    for (auto t : four)
        if (decl.find(t) != std::string::npos) return 4;
    for (auto t : two)
        if (decl.find(t) != std::string::npos) return 2;
    return 1;
}

// False when the text holds no such entry.
bool ptx_signature(const std::string& ptx, const std::string& name, std::vector<size_t>& sizes) {
    const std::string key = ".entry " + name + "(";
    size_t at = ptx.find(key);
    if (at == std::string::npos) return false;
    size_t begin = at + key.size(), end = ptx.find(')', begin);
    std::stringstream list(ptx.substr(begin, end - begin));
    std::string decl;
    sizes.clear();
    while (std::getline(list, decl, ','))
        if (decl.find(".param") != std::string::npos) sizes.push_back(ptx_type_size(decl));
    return true;
}

std::string join(const std::vector<size_t>& v) {
    std::string s;
    for (size_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return "[" + s + "]";
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// `host launches` output: `kernel gx gy gz bx by bz shared_bytes` per line.
std::map<std::string, Launch> read_launches(const std::string& path) {
    std::map<std::string, Launch> launches;
    std::stringstream lines(read_file(path));
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        std::stringstream fields(line);
        std::string kernel, extra;
        Launch l{};
        fields >> kernel >> l.grid[0] >> l.grid[1] >> l.grid[2] >> l.block[0] >> l.block[1] >> l.block[2] >> l.shared;
        if (!fields || (fields >> extra))
            throw std::runtime_error(path + ":" + std::to_string(number) +
                                     ": want `kernel gx gy gz bx by bz shared_bytes` (from `host launches`)");
        auto known = launches.find(kernel);
        if (known != launches.end() && !same(known->second, l))
            throw std::runtime_error(path + ": " + kernel + " has two launch shapes");
        launches[kernel] = l;
    }
    if (launches.empty()) throw std::runtime_error(path + " lists no launch");
    return launches;
}

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if ((unsigned char)c < 0x20) out += fmt("\\u%04x", (double)c);
        else out += c;
    }
    return out + "\"";
}

std::string json_number(double v) { return std::isfinite(v) ? fmt("%.6g", v) : "null"; }

std::string utc_now() {
    char buf[32];
    std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// ---- the runner

struct Runner {
    bool quick = false;
    int runs = 20;
    // A kernel of a few microseconds gets more launches than `runs`, up to ten times as many,
    // until each side has this much timed: its median is then as steady as a long kernel's.
    static constexpr double kMinTimedMs = 2.0;
    std::vector<std::string> only;
    std::string rust_ptx, twin_text;  // twin_text is empty for a cubin
    std::map<std::string, Launch> host_launches;  // --launches: what --signatures compares
    CUmodule rust = nullptr, twin = nullptr;
    std::string hopper_ptx, hopper_twin_text;  // --hopper; the twin text is empty for a cubin
    CUmodule hopper_rust = nullptr, hopper_twin = nullptr;
    CUstream stream = nullptr;
    CUevent start = nullptr, stop = nullptr;
    Buffer scratch;  // written before every timed launch to flush L2
    unsigned sms = 0;
    std::vector<Row> rows;
    std::string current = "setup";  // what was running, for error messages

    // The full sizes are the host's defaults, at which --signatures compares launch shapes.
    size_t pick(size_t full, size_t small) const { return quick && !g_dry ? small : full; }

    bool wanted(const std::string& kernel) const {
        if (only.empty()) return true;
        for (auto& o : only)
            if (kernel.find(o) != std::string::npos) return true;
        return false;
    }

    // The first case of a kernel runs at the host's default size, so all of its launch shape
    // must be the host's; a later one (another size) only its block and shared bytes.
    bool first_of_kernel(const Case& c) const {
        return std::none_of(rows.begin(), rows.end(), [&](const Row& r) { return r.kernel == c.kernel; });
    }

    // "" when the case launches as the host does (or no --launches was given).
    std::string launch_mismatch(const Case& c) const {
        if (host_launches.empty()) return "";
        auto host = host_launches.find(c.kernel);
        if (host == host_launches.end()) return "the host's launches list no " + c.kernel;
        bool first = first_of_kernel(c);
        Launch runner = launch_of(c.shape);
        if (first ? same(runner, host->second) : same_block(runner, host->second)) return "";
        return "runner launches " + describe(runner) + ", the host " + describe(host->second) +
               (first ? "" : " (its block and shared bytes differ; this case is not at the host's default size)");
    }

    CUfunction function(CUmodule m, const std::string& name, CUresult& r) {
        CUfunction f = nullptr;
        r = cuModuleGetFunction(&f, m, name.c_str());
        return f;
    }

    void launch(CUfunction f, Case& c) {
        Args a = c.args;
        CK(cuLaunchKernel(f, c.shape.gx, c.shape.gy, c.shape.gz, c.shape.bx, c.shape.by, 1, c.shape.shared, stream, a.params(),
                          nullptr));
    }

    std::vector<unsigned char> run_once(CUfunction f, Case& c) {
        // A reset prepares the output itself (zeroed bins, a fresh copy of SAXPY's y); any other
        // output is NaN everywhere, so an element a kernel does not write cannot agree.
        if (c.reset)
            c.reset(stream);
        else
            CK(cuMemsetD8Async(c.out->ptr, 0xFF, c.out->bytes, stream));
        launch(f, c);
        CK(cuStreamSynchronize(stream));
        std::vector<unsigned char> host(c.out->bytes);
        CK(cuMemcpyDtoH(host.data(), c.out->ptr, host.size()));
        return host;
    }

    // "" when the two results agree.
    static std::string agree(const Case& c, const std::vector<unsigned char>& r, const std::vector<unsigned char>& t) {
        if (c.compare == Compare::Racy) {
            unsigned a, b;
            std::memcpy(&a, r.data(), 4);
            std::memcpy(&b, t.data(), 4);
            bool ok = a >= 1 && a <= c.racy_threads && b >= 1 && b <= c.racy_threads;
            std::string counts = "counts " + std::to_string(a) + " / " + std::to_string(b);
            return ok ? "" : counts + " outside [1, " + std::to_string(c.racy_threads) + "]";
        }
        if (c.compare == Compare::Reference) return "";
        if (c.compare == Compare::Exact) {
            if (std::memcmp(r.data(), t.data(), r.size()) == 0) return "";
            size_t i = 0;
            while (r[i] == t[i]) ++i;
            return "results differ first at element " + std::to_string(i / 4);
        }
        const float* a = reinterpret_cast<const float*>(r.data());
        const float* b = reinterpret_cast<const float*>(t.data());
        size_t n = r.size() / 4, bad = 0, first = 0;
        double worst = 0;
        for (size_t i = 0; i < n; ++i) {
            double e = std::fabs((double)a[i] - (double)b[i]);
            if (!(e <= c.tolerance)) {
                if (!bad++) first = i;
                worst = std::isnan(e) ? INFINITY : std::max(worst, e);
            }
        }
        if (!bad) return "";
        return std::to_string(bad) + " elements differ beyond " + fmt("%.3g", c.tolerance) + " (first " +
               std::to_string(first) + ": " + fmt("%.9g", a[first]) + " vs " + fmt("%.9g", b[first]) + ", worst " +
               fmt("%.3g", worst) + ")";
    }

    double time_one(CUfunction f, Case& c) {
        if (c.reset) c.reset(stream);
        // Flushed before every launch, like the project's own timer: inputs come from DRAM.
        CK(cuMemsetD8Async(scratch->ptr, 0, scratch->bytes, stream));
        CK(cuEventRecord(start, stream));
        launch(f, c);
        CK(cuEventRecord(stop, stream));
        CK(cuEventSynchronize(stop));
        float ms = 0;
        CK(cuEventElapsedTime(&ms, start, stop));
        return ms;
    }

    static void median_min(std::vector<double> v, double& median, double& min) {
        std::sort(v.begin(), v.end());
        size_t n = v.size();
        median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        min = v.front();
    }

    int regs(CUfunction f) {
        int r = -1;
        cuFuncGetAttribute(&r, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        return r;
    }

    void run(Case& c) {
        if (!wanted(c.kernel)) return;
        current = c.kernel + " " + c.size;
        Row row;
        row.kernel = c.kernel, row.size = c.size, row.unit = c.unit, row.work = c.work;
        std::vector<size_t> sizes;
        CUresult rr = CUDA_SUCCESS, tr = CUDA_SUCCESS;
        CUfunction rf = nullptr, tf = nullptr;
        const std::string& rust_ptx = c.hopper ? hopper_ptx : this->rust_ptx;
        const std::string& twin_text = c.hopper ? hopper_twin_text : this->twin_text;
        if (g_dry) {
            if (!ptx_signature(rust_ptx, c.kernel, sizes)) rr = CUDA_ERROR_NOT_FOUND;
            if (!twin_text.empty() && !ptx_signature(twin_text, c.kernel, sizes)) tr = CUDA_ERROR_NOT_FOUND;
        } else {
            rf = function(c.hopper ? hopper_rust : rust, c.kernel, rr);
            tf = function(c.hopper ? hopper_twin : twin, c.kernel, tr);
        }
        if (rr != CUDA_SUCCESS || tr != CUDA_SUCCESS) {
            row.check = "MISSING";
            row.detail = rr != CUDA_SUCCESS ? "not in the project PTX: " + error_text(rr)
                                            : "not in the twins module: " + error_text(tr);
        } else if (!ptx_signature(rust_ptx, c.kernel, sizes) || sizes != c.args.layout()) {
            row.check = "SIGNATURE";
            row.detail = "project PTX parameters " + join(sizes) + " bytes, runner passes " + join(c.args.layout());
        } else if (!twin_text.empty() && (!ptx_signature(twin_text, c.kernel, sizes) || sizes != c.args.layout())) {
            row.check = "SIGNATURE";
            row.detail = "twin PTX parameters " + join(sizes) + " bytes, runner passes " + join(c.args.layout());
        } else if (g_dry && !(row.detail = launch_mismatch(c)).empty()) {
            row.check = "SIGNATURE";
        } else if (g_dry) {
            row.passed = true;
            row.check = "SIGNATURE OK";
            row.detail = join(c.args.layout()) + " " + describe(launch_of(c.shape)) +
                         (host_launches.empty()    ? ""
                          : first_of_kernel(c) ? ", as the host"
                                               : ", block and shared as the host");
        } else {
            row.rust_regs = regs(rf), row.c_regs = regs(tf);
            // Past 48 KiB, static and dynamic together, shared memory needs opting in, as the host
            // does for any launch with dynamic shared memory.
            if (c.shape.shared > 0)
                for (CUfunction f : {rf, tf})
                    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)c.shape.shared));
            if (c.setup) c.setup();
            auto r = run_once(rf, c), t = run_once(tf, c);
            std::string problem = agree(c, r, t);
            if (problem.empty() && c.reference) {
                problem = c.reference(r);
                if (!problem.empty()) problem = "Rust result vs CPU: " + problem;
                else if (!(problem = c.reference(t)).empty()) problem = "CUDA C result vs CPU: " + problem;
            }
            row.passed = problem.empty();
            row.check = row.passed ? "PASS" : "FAIL";
            row.detail = problem;
            if (row.passed && c.compare == Compare::Racy) row.detail = "racy by design: counts only range-checked";

            double probe = 0;
            for (int w = 0; w < 2; ++w) time_one(rf, c), probe = time_one(tf, c);  // warm-up
            int launches = std::max(runs, std::min(10 * runs, (int)std::ceil(kMinTimedMs / std::max(probe, 1e-6))));
            std::vector<double> rust_ms, c_ms;
            for (int i = 0; i < launches; ++i) {
                // Alternate which goes first, so drift and ordering hit both alike.
                if (i % 2 == 0) rust_ms.push_back(time_one(rf, c)), c_ms.push_back(time_one(tf, c));
                else c_ms.push_back(time_one(tf, c)), rust_ms.push_back(time_one(rf, c));
            }
            median_min(rust_ms, row.rust_ms, row.rust_min);
            median_min(c_ms, row.c_ms, row.c_min);
        }
        print(row);
        rows.push_back(row);
    }

    static double rate(const Row& r, double ms) { return r.work / (ms * 1e-3) / 1e9; }

    static void header() {
        if (g_dry) return;
        std::printf("%-26s %-22s %10s %10s %7s %10s %10s %-8s %9s  %s\n", "kernel", "size", "Rust ms", "CUDA C ms",
                    "ratio", "Rust rate", "C rate", "unit", "regs R/C", "check");
    }

    static void print(const Row& r) {
        if (g_dry) {
            std::printf("%-26s %-22s %s: %s\n", r.kernel.c_str(), r.size.c_str(), r.check.c_str(), r.detail.c_str());
            return;
        }
        std::string regs = std::to_string(r.rust_regs) + "/" + std::to_string(r.c_regs);
        std::printf("%-26s %-22s %10.4f %10.4f %7.3f %10.1f %10.1f %-8s %9s  %s%s%s\n", r.kernel.c_str(),
                    r.size.c_str(), r.rust_ms, r.c_ms, r.rust_ms / r.c_ms, rate(r, r.rust_ms), rate(r, r.c_ms),
                    r.unit.c_str(), regs.c_str(), r.check.c_str(), r.detail.empty() ? "" : ": ", r.detail.c_str());
        std::fflush(stdout);
    }

    // ---- the kernel families; sizes follow the host's defaults (host/src/ops/*.rs), block and
    // tile sizes come from interface.h

    // Blocks per SM of the grid-stride kernels (BLOCKS_PER_SM in host/src/ops/saxpy.rs and
    // histogram.rs; --signatures --launches checks it).
    static constexpr unsigned kBlocksPerSm = 8;

    void vector_add() {
        size_t n = pick(1u << 28, 1u << 26);
        auto ah = random_f32(n, 1), bh = random_f32(n, 2);
        auto a = upload(ah), b = upload(bh), c = device(4 * n);
        for (std::string k : {"vector_add", "vector_add_vec4"}) {
            Case x;
            x.kernel = k, x.size = "n=" + std::to_string(n), x.unit = "GB/s", x.work = 12.0 * n;
            // vec4: VECTOR_QUADS_PER_THREAD quads per thread, plus one position for the n % 4 tail
            // (as the host).
            x.shape = k == "vector_add" ? linear(n, DEFAULT_BLOCK)
                                        : linear(blocks(n / 4 + 1, VECTOR_QUADS_PER_THREAD), DEFAULT_BLOCK);
            x.args.slice(a, n).slice(b, n).ptr(c);
            x.out = c, x.compare = Compare::Exact;
            // Both outputs start poisoned alike, so agreeing is not enough: check every element.
            x.reference = [&ah, &bh](const std::vector<unsigned char>& out) -> std::string {
                const float* o = reinterpret_cast<const float*>(out.data());
                for (size_t i = 0; i < ah.size(); ++i)
                    if (!(o[i] == ah[i] + bh[i]))
                        return "c[" + std::to_string(i) + "] = " + fmt("%.9g", o[i]) + ", want " +
                               fmt("%.9g", ah[i] + bh[i]);
                return "";
            };
            run(x);
        }
    }

    void saxpy() {
        size_t n = pick(1u << 28, 1u << 26);
        const float alpha = 2.5f;  // host/src/ops/saxpy.rs A
        auto xh = random_f32(n, 3), yh = random_f32(n, 4);
        auto x = upload(xh), y0 = upload(yh), y = device(4 * n);
        for (std::string k : {"saxpy", "saxpy_vec4"}) {
            Case c;
            c.kernel = k, c.size = "n=" + std::to_string(n), c.unit = "GB/s", c.work = 12.0 * n;
            c.shape = {kBlocksPerSm * sms, 1, DEFAULT_BLOCK, 1, 0};  // grid-stride
            c.args.add(alpha).slice(x, n).ptr(y);
            c.out = y, c.compare = Compare::Close;
            c.tolerance = 4 * FLT_EPSILON * (std::fabs(alpha) + 1);
            // y is updated in place: every launch starts from a fresh copy.
            c.reset = [y, y0](CUstream s) { CK(cuMemcpyDtoDAsync(y->ptr, y0->ptr, y->bytes, s)); };
            double tolerance = c.tolerance;
            c.reference = [=, &xh, &yh](const std::vector<unsigned char>& out) -> std::string {
                const float* o = reinterpret_cast<const float*>(out.data());
                for (size_t i : sample_indices(n, 256, 5)) {
                    double want = (double)alpha * xh[i] + yh[i];
                    if (!(std::fabs(o[i] - want) <= tolerance))
                        return "y[" + std::to_string(i) + "] = " + fmt("%.9g", o[i]) + ", want " + fmt("%.9g", want);
                }
                return "";
            };
            run(c);
        }
    }

    void counter() {
        unsigned threads = 1u << 20;
        auto counter = device(4);
        for (std::string k : {"counter_racy", "counter_atomic"}) {
            Case c;
            c.kernel = k, c.size = "threads=" + std::to_string(threads), c.unit = "Gop/s", c.work = threads;
            c.shape = linear(threads, DEFAULT_BLOCK);
            c.args.ptr(counter).add(threads);
            c.out = counter;
            c.reset = [counter](CUstream s) { CK(cuMemsetD32Async(counter->ptr, 0, 1, s)); };
            if (k == "counter_racy") {
                c.compare = Compare::Racy, c.racy_threads = threads;
            } else {
                c.compare = Compare::Exact;
                c.reference = [threads](const std::vector<unsigned char>& out) -> std::string {
                    unsigned v;
                    std::memcpy(&v, out.data(), 4);
                    return v == threads ? "" : "count " + std::to_string(v) + ", want " + std::to_string(threads);
                };
            }
            run(c);
        }
    }

    void histogram() {
        size_t n = pick(1u << 28, 1u << 26);
        const unsigned bins = HISTOGRAM_DEFAULT_BINS;
        const double lo = -4.0, hi = 4.0;  // host/src/ops/histogram.rs defaults
        auto counts = device(4 * bins);
        for (bool f32 : {false, true}) {
            // u32 values in [0, 300): some past the last bin; f32 in [-4.5, 4.5): some outside.
            std::vector<unsigned> uh;
            std::vector<float> fh;
            Buffer values;
            std::vector<unsigned> want(bins, 0);
            if (f32) {
                fh = random_f32(n, 7, -4.5f, 4.5f);
                values = upload(fh);
                // NumPy's edges: linspace in f64, rounded to f32; the last bin holds hi.
                std::vector<float> edges(bins + 1);
                for (unsigned b = 0; b < bins; ++b) edges[b] = (float)(b * ((hi - lo) / bins) + lo);
                edges[bins] = (float)hi;
                for (float v : fh) {
                    if (!(v >= edges[0] && v <= edges[bins])) continue;
                    size_t b = std::upper_bound(edges.begin(), edges.end(), v) - edges.begin() - 1;
                    ++want[b >= bins ? bins - 1 : b];
                }
            } else {
                uh = random_u32(n, 6, 0, 300);
                values = upload(uh);
                for (unsigned v : uh)
                    if (v < bins) ++want[v];
            }
            for (std::string method : {"global", "shared", "shared_vec4"}) {
                Case c;
                c.kernel = "histogram_" + method + (f32 ? "_f32" : "_u32");
                c.size = "n=" + std::to_string(n) + " bins=" + std::to_string(bins);
                c.unit = "GB/s", c.work = 4.0 * n;
                // Block-private bins in dynamic shared memory for the shared kernels.
                c.shape = {kBlocksPerSm * sms, 1, DEFAULT_BLOCK, 1, method == "global" ? 0u : 4 * bins};
                c.args.slice(values, n);
                if (f32) c.args.add(lo).add(hi);
                c.args.add(bins).ptr(counts);
                c.out = counts, c.compare = Compare::Exact;
                c.reset = [counts, bins](CUstream s) { CK(cuMemsetD32Async(counts->ptr, 0, bins, s)); };
                c.reference = [want](const std::vector<unsigned char>& out) -> std::string {
                    for (size_t b = 0; b < want.size(); ++b) {
                        unsigned v;
                        std::memcpy(&v, out.data() + 4 * b, 4);
                        if (v != want[b])
                            return "bin " + std::to_string(b) + " = " + std::to_string(v) + ", want " +
                                   std::to_string(want[b]);
                    }
                    return "";
                };
                run(c);
            }
        }
    }

    // One block of SCAN_BLOCK threads per tile (host/src/ops/scan.rs tile_config); the scratch
    // (tile counter and states) zeroed before every launch, as the host's Scanner does.
    static size_t scan_tiles(size_t n) { return (n + SCAN_TILE - 1) / SCAN_TILE; }

    void scan() {
        size_t n = pick(1u << 28, 1u << 26), tiles = scan_tiles(n);
        auto scratch = device(8 * (1 + tiles));
        for (bool f32 : {false, true}) {
            // u32 in [0, 16) (exact); f32 in [-1, 1) (close: the look-back's order varies).
            std::vector<unsigned> uh;
            std::vector<float> fh;
            Buffer values = f32 ? upload(fh = random_f32(n, 10)) : upload(uh = random_u32(n, 11, 0, 16));
            auto out = device(4 * n + 4);  // the n outputs, then the total
            Case c;
            c.kernel = f32 ? "scan_exclusive_f32" : "scan_exclusive_u32";
            c.size = "n=" + std::to_string(n), c.unit = "GB/s", c.work = 8.0 * n;
            c.shape = {(unsigned)tiles, 1, SCAN_BLOCK, 1, 0};
            c.args.slice(values, n).ptr(out).ptr(scratch).add<CUdeviceptr>(out->ptr + 4 * n);
            c.out = out;
            c.reset = [out, scratch](CUstream s) {
                CK(cuMemsetD8Async(scratch->ptr, 0, scratch->bytes, s));
                CK(cuMemsetD8Async(out->ptr, 0xFF, out->bytes, s));
            };
            // Every output against the prefix sums in double; for f32 within
            // eps * ((32 + 7 * tiles) * sum|x| + max|prefix|) (host/src/ops/scan.rs).
            // (With --signatures nothing is drawn: the vectors are empty.)
            size_t drawn = f32 ? fh.size() : uh.size();
            double magnitude = 0, largest = 0, sum = 0;
            std::vector<double> want(drawn + 1);
            for (size_t i = 0; i < drawn; ++i) {
                want[i] = sum;
                double v = f32 ? (double)fh[i] : (double)uh[i];
                sum += v, magnitude += std::fabs(v), largest = std::max(largest, std::fabs(sum));
            }
            want[drawn] = sum;
            c.compare = f32 ? Compare::Close : Compare::Exact;
            c.tolerance = f32 ? FLT_EPSILON * ((32.0 + 7.0 * tiles) * magnitude + largest) : 0;
            double tolerance = c.tolerance;
            c.reference = [want = std::move(want), tolerance, f32](const std::vector<unsigned char>& out) -> std::string {
                for (size_t i = 0; i < want.size(); ++i) {
                    double got;
                    if (f32) {
                        float v;
                        std::memcpy(&v, out.data() + 4 * i, 4);
                        got = v;
                    } else {
                        unsigned v;
                        std::memcpy(&v, out.data() + 4 * i, 4);
                        got = v;
                    }
                    // u32 sums wrap modulo 2^32 (they stay below 2^32 here).
                    if (!(std::fabs(got - want[i]) <= tolerance))
                        return "out[" + std::to_string(i) + "] = " + fmt("%.9g", got) + ", want " + fmt("%.9g", want[i]);
                }
                return "";
            };
            run(c);
        }
    }

    void compact() {
        size_t n = pick(1u << 28, 1u << 26), tiles = scan_tiles(n);
        const double low = -0.25, high = 0.25;  // host/src/ops/compact.rs defaults: about 25% kept
        auto fh = random_f32(n, 12);
        auto values = upload(fh), scratch = device(8 * (1 + tiles));
        auto out = device(4 * n + 4);  // the output, then the count
        Case c;
        c.kernel = "compact_window_f32";
        c.size = "n=" + std::to_string(n);
        std::vector<float> want;
        for (float v : fh)
            if (low < (double)v && (double)v < high) want.push_back(v);
        c.unit = "GB/s", c.work = 4.0 * (n + want.size());
        c.shape = {(unsigned)tiles, 1, SCAN_BLOCK, 1, 0};
        c.args.slice(values, n).add(low).add(high).ptr(out).ptr(scratch).add<CUdeviceptr>(out->ptr + 4 * n);
        c.out = out, c.compare = Compare::Exact;
        c.reset = [out, scratch](CUstream s) {
            CK(cuMemsetD8Async(scratch->ptr, 0, scratch->bytes, s));
            CK(cuMemsetD8Async(out->ptr, 0xFF, out->bytes, s));
        };
        // The kept values in order, the rest still poisoned, and the count.
        c.reference = [want = std::move(want), n](const std::vector<unsigned char>& out) -> std::string {
            unsigned count;
            std::memcpy(&count, out.data() + 4 * n, 4);
            if (count != want.size())
                return "count " + std::to_string(count) + ", want " + std::to_string(want.size());
            if (std::memcmp(out.data(), want.data(), 4 * want.size()) != 0) return "the kept values differ";
            for (size_t i = want.size(); i < n; ++i) {
                unsigned v;
                std::memcpy(&v, out.data() + 4 * i, 4);
                if (v != 0xFFFFFFFFu) return "out[" + std::to_string(i) + "] past the count was written";
            }
            return "";
        };
        run(c);
    }

    void matmul() {
        size_t small = pick(4096, 2048), large = pick(8192, 4096);
        auto ah = random_f32(large * large, 8), bh = random_f32(large * large, 9);
        // A smaller shape uses the first m * k and k * n elements: still random matrices.
        auto a = upload(ah), b = upload(bh);
        struct Variant {
            const char* kernel;
            unsigned tile_rows, tile_cols, threads, shared;
            bool large;
        };
        // Launch shapes from interface.h, as the host computes them (host/src/ops/matmul/launch.rs):
        // BM x BN tiles of C; the first three steps take 2D blocks of one thread per output.
#define MATMUL_VEC4(kernel, bm, bn, bk, tm, tn, blocks, threads, shared_bytes) \
    Variant{#kernel, bm, bn, threads, shared_bytes, true},
        const Variant variants[] = {
            {"matmul_naive", MATMUL_NAIVE_BLOCK, MATMUL_NAIVE_BLOCK, 0, 0, false},
            {"matmul_tiled_16", MATMUL_SMALL_TILE, MATMUL_SMALL_TILE, 0, MATMUL_SMALL_TILE_SHARED_BYTES, false},
            {"matmul_tiled_32", MATMUL_LARGE_TILE, MATMUL_LARGE_TILE, 0, MATMUL_LARGE_TILE_SHARED_BYTES, false},
            {"matmul_blocked_128x128", MATMUL_BM, MATMUL_BN, MATMUL_BLOCKED_THREADS, MATMUL_BLOCKED_SHARED_BYTES, true},
            {"matmul_vload_128x128", MATMUL_BM, MATMUL_BN, MATMUL_BLOCKED_THREADS, MATMUL_BLOCKED_SHARED_BYTES, true},
            {"matmul_vshared_128x128", MATMUL_BM, MATMUL_BN, MATMUL_BLOCKED_THREADS, MATMUL_BLOCKED_SHARED_BYTES, true},
            SGEMM_CONFIGS(MATMUL_VEC4)  // step 4c: the first is the default, matmul_vec4_128x128
            {"matmul_cp_async_128x128", MATMUL_CP_ASYNC_BM, MATMUL_CP_ASYNC_BN, MATMUL_CP_ASYNC_THREADS,
             MATMUL_CP_ASYNC_SHARED_BYTES, true},
            {"matmul_warps_128x256", MATMUL_ASYNC_BM, MATMUL_ASYNC_BN, MATMUL_ASYNC_THREADS, MATMUL_ASYNC_SHARED_BYTES,
             true},
            {"matmul_async_128x256", MATMUL_ASYNC_BM, MATMUL_ASYNC_BN, MATMUL_ASYNC_THREADS, MATMUL_ASYNC_SHARED_BYTES,
             true},
        };
#undef MATMUL_VEC4
        for (size_t side : {small, large}) {
            size_t m = side, n = side, k = side;
            auto c = device(4 * m * n);
            for (const Variant& v : variants) {
                if (side == large && !v.large) continue;  // the simple kernels would take too long
                Case x;
                x.kernel = v.kernel;
                x.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
                x.unit = "GFLOP/s", x.work = 2.0 * m * n * k;
                unsigned gx = blocks(n, v.tile_cols), gy = blocks(m, v.tile_rows);
                x.shape = v.threads ? Shape{gx, gy, v.threads, 1, v.shared}
                                    : Shape{gx, gy, v.tile_cols, v.tile_rows, v.shared};
                x.args.slice(a, m * k).slice(b, k * n).ptr(c).add(m).add(n).add(k);
                x.out = c, x.compare = Compare::Close, x.tolerance = 4.0 * k * FLT_EPSILON;
                double tolerance = x.tolerance;
                x.reference = [=, &ah, &bh](const std::vector<unsigned char>& out) -> std::string {
                    const float* o = reinterpret_cast<const float*>(out.data());
                    for (size_t e : sample_indices(m * n, 32, 10)) {
                        size_t row = e / n, col = e % n;
                        double want = 0;
                        for (size_t i = 0; i < k; ++i) want += (double)ah[row * k + i] * bh[i * n + col];
                        if (!(std::fabs(o[e] - want) <= tolerance))
                            return "C[" + std::to_string(row) + "][" + std::to_string(col) + "] = " +
                                   fmt("%.9g", o[e]) + ", want " + fmt("%.9g", want);
                    }
                    return "";
                };
                run(x);
            }
        }
    }

    // interface::matmul::split_count: `wanted` splits of `slices` slices made even, the fewest
    // runs of ceil(slices / wanted) that cover them (none empty).
    static size_t split_count(size_t slices, size_t wanted) {
        wanted = wanted == 0 ? 1 : wanted > slices ? slices : wanted;
        size_t per = (slices + wanted - 1) / wanted;
        return (slices + per - 1) / per;
    }

    // The splits library/src/matmul/split.rs's f32_splits_for picks: none while C's 64x64 tiles
    // outnumber the SMs; else enough that tiles x splits come to about
    // MATMUL_SPLIT_TARGET_BLOCKS_PER_SM blocks an SM, each split at least MATMUL_SPLIT_MIN_SLICES
    // slices, made even (split_count).
    size_t f32_splits_for(size_t m, size_t n, size_t k) const {
        size_t tiles = (size_t)blocks(m, MATMUL_SPLIT_BM) * blocks(n, MATMUL_SPLIT_BN);
        if (tiles > sms) return 1;
        size_t slices = blocks(k, MATMUL_SPLIT_BK);
        return split_count(slices, std::min<size_t>((size_t)MATMUL_SPLIT_TARGET_BLOCKS_PER_SM * sms / tiles,
                                                    slices / MATMUL_SPLIT_MIN_SLICES));
    }

    // The splits library/src/matmul/split.rs's async_splits_for picks for step 5d: none while C's
    // 128x256 tiles fill a wave; else the count of least cost, its waves of blocks (each 1/splits
    // of k) plus MATMUL_ASYNC_SPLIT_COST_PERCENT a split, up to MATMUL_ASYNC_SPLIT_MAX_WAVES waves
    // and down to MATMUL_ASYNC_SPLIT_MIN_SLICES slices a split (the fewest on a tie), made even.
    size_t async_splits_for(size_t m, size_t n, size_t k) const {
        size_t tiles = (size_t)blocks(m, MATMUL_ASYNC_BM) * blocks(n, MATMUL_ASYNC_BN);
        if (tiles >= sms) return 1;
        size_t slices = blocks(k, MATMUL_ASYNC_BK);
        size_t most = std::max<size_t>(
            1, std::min<size_t>(slices / MATMUL_ASYNC_SPLIT_MIN_SLICES, MATMUL_ASYNC_SPLIT_MAX_WAVES * sms / tiles));
        auto numerator = [&](size_t s) {
            return 100 * ((tiles * s + sms - 1) / sms) + (s > 1 ? MATMUL_ASYNC_SPLIT_COST_PERCENT * s * s : 0);
        };
        size_t best = 1;
        for (size_t s = 2; s <= most; ++s)
            if (numerator(s) * 100 * best < numerator(best) * 100 * s) best = s;
        return split_count(slices, best);
    }

    // Threads the reduction gives each quad of C (interface::matmul::reduce_groups).
    static size_t reduce_groups(size_t splits) {
        size_t wanted = (splits + MATMUL_REDUCE_SPLITS_PER_THREAD - 1) / MATMUL_REDUCE_SPLITS_PER_THREAD, groups = 1;
        while (groups < wanted && groups < MATMUL_REDUCE_MAX_GROUPS) groups *= 2;
        return groups;
    }

    // A split product's shape: C is m x n, k the inner dimension, in `splits` layers.
    struct SplitShape {
        size_t m, n, k, splits;
    };

    // The first of 32 sampled elements of C (seeded by `seed`) where the sum of a split product's
    // layers in `out` differs from the f64 product of `a_at(i, p)` and `b_at(p, j)` by more than
    // 2 k FLT_EPSILON of the magnitudes, as a message; "" when none does.
    template <class A, class B>
    static std::string check_split_sums(const std::vector<unsigned char>& out, SplitShape d, uint64_t seed, A a_at,
                                        B b_at) {
        const float* o = reinterpret_cast<const float*>(out.data());
        for (size_t e : sample_indices(d.m * d.n, 32, seed)) {
            size_t i = e / d.n, j = e % d.n;
            double sum = 0, magnitude = 0, got = 0;
            for (size_t p = 0; p < d.k; ++p) {
                double t = a_at(i, p) * b_at(p, j);
                sum += t, magnitude += std::fabs(t);
            }
            for (size_t s = 0; s < d.splits; ++s) got += o[s * d.m * d.n + e];
            if (!(std::fabs(got - sum) <= 2.0 * d.k * FLT_EPSILON * magnitude + FLT_MIN))
                return "the splits of C[" + std::to_string(i) + "][" + std::to_string(j) + "] sum to " +
                       fmt("%.9g", got) + ", want " + fmt("%.9g", sum);
        }
        return "";
    }

    // Step 4d, split k (kernels/src/matmul/split_k.rs, twins in matmul/split_k.cu): step 4c's
    // kernel on 64x64 tiles on a grid `splits` deep, each layer's partial product checked through
    // their sum, at long-k shapes (and an odd one, every block checked) in as many splits as the
    // host picks; then the reduction of that many partials of C's size, which step H3 shares.
    void matmul_split() {
        const std::string product = "matmul_vec4_64x64_split", reduction = "matmul_split_reduce";
        struct Dims {
            size_t m, n, k;
        };
        const std::vector<Dims> shapes = {
            {64, 64, 65536}, {128, 128, 16384}, {16, 4096, 4096}, {64, 64, 8192}, {67, 61, 5003}};
        if (wanted(product)) {
            std::vector<SplitShape> split;
            for (Dims d : shapes) split.push_back({d.m, d.n, d.k, f32_splits_for(d.m, d.n, d.k)});
            SplitTile tile{MATMUL_SPLIT_BM, MATMUL_SPLIT_BN, MATMUL_SPLIT_THREADS, MATMUL_SPLIT_SHARED_BYTES};
            f32_split_products(product, split, tile, 46);
        }
        if (!wanted(reduction)) return;
        // The reduction alone, at the partials the products above leave.
        for (Dims d : shapes) {
            size_t len = d.m * d.n, splits = f32_splits_for(d.m, d.n, d.k);
            auto values = random_f32(splits * len, 44);
            auto partials = upload(values), c = device(4 * len);
            size_t quads = MATMUL_REDUCE_THREADS / reduce_groups(splits);
            Case x;
            x.kernel = reduction;
            x.size = std::to_string(splits) + "x" + std::to_string(len);
            x.unit = "GB/s", x.work = 4.0 * (splits + 1) * len;
            x.shape = Shape{blocks(blocks(len, 4), quads), 1, MATMUL_REDUCE_THREADS, 1, 0};
            x.args.slice(partials, splits * len).ptr(c).add(len).add(splits);
            // The same additions in the same order: equal to the bit.
            x.out = c, x.compare = Compare::Exact;
            x.reference = [=, &values](const std::vector<unsigned char>& out) -> std::string {
                const float* o = reinterpret_cast<const float*>(out.data());
                for (size_t e : sample_indices(len, 64, 45)) {
                    double sum = 0, magnitude = 0;
                    for (size_t s = 0; s < splits; ++s) sum += values[s * len + e], magnitude += std::fabs(values[s * len + e]);
                    if (!(std::fabs(o[e] - sum) <= splits * FLT_EPSILON * magnitude + FLT_MIN))
                        return "C[" + std::to_string(e) + "] = " + fmt("%.9g", o[e]) + ", want " + fmt("%.9g", sum);
                }
                return "";
            };
            run(x);
        }
    }

    // Step 5d, split k on step 5c's tiles (kernels/src/matmul/split_async.rs, twin in
    // matmul/split_async.cu): each layer's partial product checked through their sum, at the
    // mid-sized shapes the host splits this way (as many splits as it picks), and at an odd
    // shape in 3 splits, edge blocks in m and n and a last run shorter than the others.
    void matmul_split_async() {
        const std::string product = "matmul_async_128x256_split";
        if (!wanted(product)) return;
        std::vector<SplitShape> shapes;
        const std::vector<std::array<size_t, 3>> picked = {{1024, 1024, 1024}, {1000, 1000, 1000}, {128, 14336, 4096}};
        for (auto [m, n, k] : picked) shapes.push_back({m, n, k, async_splits_for(m, n, k)});
        shapes.push_back({333, 517, 1031, 3});
        SplitTile tile{MATMUL_ASYNC_BM, MATMUL_ASYNC_BN, MATMUL_ASYNC_THREADS, MATMUL_ASYNC_SHARED_BYTES};
        f32_split_products(product, shapes, tile, 56);
    }

    // An f32 split step's tile: rows and columns of C, threads, dynamic shared bytes.
    struct SplitTile {
        size_t bm, bn;
        unsigned threads, shared;
    };

    // The cases of the f32 split product `product` (step 4d or 5d) on `tile`, at each shape on a
    // grid `splits` deep, each layer's partial product checked through their sum (inputs seeded
    // by `seed` and `seed + 1`, the sampled elements by `seed + 2`). A shape uses the first m * k
    // and k * n elements of one pair of random matrices: still random matrices.
    void f32_split_products(const std::string& product, const std::vector<SplitShape>& shapes, SplitTile tile,
                            uint64_t seed) {
        size_t most = 0;
        for (SplitShape d : shapes) most = std::max(most, std::max(d.m * d.k, d.k * d.n));
        auto ah = random_f32(most, seed), bh = random_f32(most, seed + 1);
        auto a = upload(ah), b = upload(bh);
        for (SplitShape d : shapes) {
            size_t m = d.m, n = d.n, k = d.k, splits = d.splits;
            auto partials = device(4 * splits * m * n);
            Case x;
            x.kernel = product;
            x.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + "/" + std::to_string(splits);
            x.unit = "GFLOP/s", x.work = 2.0 * m * n * k;
            x.shape = Shape{blocks(n, tile.bn), blocks(m, tile.bm), tile.threads, 1, tile.shared};
            x.shape.gz = (unsigned)splits;
            x.args.slice(a, m * k).slice(b, k * n).ptr(partials).add(m).add(n).add(k);
            x.out = partials, x.compare = Compare::Close, x.tolerance = 4.0 * k * FLT_EPSILON;
            x.reference = [=, &ah, &bh](const std::vector<unsigned char>& out) -> std::string {
                auto a_at = [&](size_t i, size_t p) { return (double)ah[i * k + p]; };
                auto b_at = [&](size_t p, size_t j) { return (double)bh[p * n + j]; };
                return check_split_sums(out, d, seed + 2, a_at, b_at);
            };
            run(x);
        }
    }

    // The tensor-core steps (kernels/src/matmul/mma_*.rs) and their input conversions
    // (convert.rs). Every side is a multiple of MATMUL_MMA_ROW_ALIGN here, so the converted
    // rows carry no padding and a smaller matrix is the first m * k elements of a larger one.
    void mma() {
        const char* products[] = {"matmul_mma_tf32_128x256", "matmul_mma_bf16_128x256", "matmul_mma_f16_128x256"};
        const char* conversions[] = {"convert_tf32", "convert_bf16", "convert_f16"};
        bool any = false;
        for (int d = 0; d < 3; ++d) any = any || wanted(products[d]) || wanted(conversions[d]);
        if (!any) return;
        size_t side = pick(8192, 4096), host_side = 4096;
        auto ah = random_f32(side * side, 8), bh = random_f32(side * side, 9);
        auto a = upload(ah), b = upload(bh);
        for (int d = 0; d < 3; ++d) {
            size_t elem = d == 0 ? 4 : 2;  // bytes of one converted element
            // The conversion: a thread per element (TF32) or per pair (16-bit), at the host's size.
            auto conversion = [&](const Buffer& src, const Buffer& dst, size_t rows, size_t cols) {
                Case x;
                x.kernel = conversions[d];
                x.size = std::to_string(rows) + "x" + std::to_string(cols);
                x.unit = "GB/s", x.work = (4.0 + elem) * rows * cols;
                x.shape = linear(rows * cols / (4 / elem), MATMUL_CONVERT_THREADS);
                x.args.slice(src, rows * cols).ptr(dst).add(rows).add(cols);
                x.out = dst, x.compare = Compare::Exact;
                return x;
            };
            {
                auto dst = device(elem * host_side * host_side);
                Case x = conversion(a, dst, host_side, host_side);
                run(x);
            }
            if (!wanted(products[d])) continue;
            // A and B converted once, by the twin, for every product case.
            auto ac = device(elem * side * side), bc = device(elem * side * side);
            std::vector<float> ar, br;  // the converted values, for the CPU spot check
            if (!g_dry) {
                CUresult r;
                CUfunction f = function(twin, conversions[d], r);
                CK(r);
                for (auto [src, dst] : {std::pair{a, ac}, std::pair{b, bc}}) {
                    Case x = conversion(src, dst, side, side);
                    launch(f, x);
                }
                CK(cuStreamSynchronize(stream));
                ar = decode(ac, side * side, d), br = decode(bc, side * side, d);
            }
            struct Shape3 {
                size_t m, n, k;
            };
            std::vector<Shape3> shapes = {{host_side, host_side, host_side}, {2048, 2048, 2048}};
            if (side == 8192) shapes.push_back({8192, 8192, 8192}), shapes.push_back({8192, 8192, 256});
            for (Shape3 s : shapes) {
                size_t m = s.m, n = s.n, k = s.k;
                auto c = device(4 * m * n);
                Case x;
                x.kernel = products[d];
                x.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
                x.unit = "GFLOP/s", x.work = 2.0 * m * n * k;
                x.shape = {blocks(n, MATMUL_MMA_BN), blocks(m, MATMUL_MMA_BM), MATMUL_MMA_THREADS, 1,
                           (unsigned)(d == 0 ? MATMUL_TF32_SHARED_BYTES : MATMUL_HALF_SHARED_BYTES)};
                x.args.slice(ac, m * k).slice(bc, k * n).ptr(c).add(m).add(n).add(k);
                // The two sides run the same instructions in the same order; the tolerance is the
                // host's for the tensor steps (host/src/ops/matmul/tensor.rs).
                x.out = c, x.compare = Compare::Close, x.tolerance = 8.0 * k * FLT_EPSILON;
                double tolerance = x.tolerance;
                x.reference = [=, &ar, &br](const std::vector<unsigned char>& out) -> std::string {
                    const float* o = reinterpret_cast<const float*>(out.data());
                    for (size_t e : sample_indices(m * n, 32, 10)) {
                        size_t row = e / n, col = e % n;
                        double want = 0;
                        for (size_t i = 0; i < k; ++i) want += (double)ar[row * k + i] * br[i * n + col];
                        if (!(std::fabs(o[e] - want) <= tolerance))
                            return "C[" + std::to_string(row) + "][" + std::to_string(col) + "] = " +
                                   fmt("%.9g", o[e]) + ", want " + fmt("%.9g", want);
                    }
                    return "";
                };
                run(x);
            }
        }
    }

    // The values of `n` converted elements of type `d` (0 TF32 in f32 bits, 1 bf16, 2 f16).
    static std::vector<float> decode(const Buffer& buffer, size_t n, int d) {
        std::vector<float> out(n);
        if (d == 0) {
            CK(cuMemcpyDtoH(out.data(), buffer->ptr, 4 * n));
            return out;
        }
        std::vector<unsigned short> bits(n);
        CK(cuMemcpyDtoH(bits.data(), buffer->ptr, 2 * n));
        for (size_t i = 0; i < n; ++i) {
            unsigned h = bits[i];
            if (d == 1) {
                unsigned f = h << 16;
                std::memcpy(&out[i], &f, 4);
            } else {
                // sign, 5-bit exponent, 10-bit mantissa; exponent 0 is subnormal (no 1 bit).
                double mantissa = (h & 0x3ff) / 1024.0;
                int exponent = (h >> 10) & 0x1f;
                double v = exponent ? std::ldexp(1.0 + mantissa, exponent - 15) : std::ldexp(mantissa, -14);
                out[i] = (float)((h & 0x8000) ? -v : v);
            }
        }
        return out;
    }

    void set_filter(const std::vector<float>& taps) {
        std::vector<float> padded(CONV_MAX_TAPS, 0.0f);
        std::copy(taps.begin(), taps.end(), padded.begin());
        for (CUmodule m : {rust, twin}) {
            CUdeviceptr symbol;
            size_t bytes;
            CK(cuModuleGetGlobal(&symbol, &bytes, m, CONV_FILTER_SYMBOL));
            if (bytes != 4 * padded.size())
                throw CudaError(std::string(CONV_FILTER_SYMBOL) + " holds " + std::to_string(bytes) +
                                " bytes, the runner writes " + std::to_string(4 * padded.size()));
            CK(cuMemcpyHtoD(symbol, padded.data(), bytes));
        }
    }

    void conv2d() {
        size_t side = pick(8192, 4096), w = side, h = side;
        auto image = random_f32(w * h, 11);
        auto in = upload(image), out = device(4 * w * h);
        struct Variant {
            const char* kernel;
            size_t radius;
        };
        for (Variant v : {Variant{"conv2d_naive", 2}, Variant{"conv2d_tiled_r2", 2}, Variant{"conv2d_tiled_r1", 1},
                          Variant{"conv2d_tiled_r3", 3}}) {
            size_t r = v.radius, width = 2 * r + 1, taps = width * width;
            auto filter = random_f32(taps, 12 + r);
            bool naive = std::string(v.kernel) == "conv2d_naive";
            Case c;
            c.kernel = v.kernel;
            c.size = std::to_string(w) + "^2 " + std::to_string(width) + "x" + std::to_string(width);
            c.unit = "GB/s", c.work = 8.0 * w * h;
            // Naive: a pixel per thread; tiled: a TILE x TILE output tile per TILE x BLOCK_ROWS block.
            c.shape = naive ? Shape{blocks(w, CONV_NAIVE_BLOCK), blocks(h, CONV_NAIVE_BLOCK), CONV_NAIVE_BLOCK,
                                    CONV_NAIVE_BLOCK, 0}
                            : Shape{blocks(w, CONV_TILE), blocks(h, CONV_TILE), CONV_TILE, CONV_BLOCK_ROWS, 0};
            c.args.slice(in, w * h).ptr(out).add(w).add(h);
            if (naive) c.args.add(r);
            c.out = out, c.compare = Compare::Close, c.tolerance = 4.0 * taps * FLT_EPSILON;
            c.setup = [this, filter] { set_filter(filter); };
            double tolerance = c.tolerance;
            c.reference = [=, &image](const std::vector<unsigned char>& bytes) -> std::string {
                const float* o = reinterpret_cast<const float*>(bytes.data());
                for (size_t e : sample_indices(w * h, 256, 13)) {
                    long y = (long)(e / w), x = (long)(e % w);
                    double want = 0;
                    for (long fy = 0; fy < (long)width; ++fy)
                        for (long fx = 0; fx < (long)width; ++fx) {
                            long iy = y + fy - (long)r, ix = x + fx - (long)r;
                            if (iy >= 0 && iy < (long)h && ix >= 0 && ix < (long)w)
                                want += (double)filter[fy * width + fx] * image[iy * w + ix];
                        }
                    if (!(std::fabs(o[e] - want) <= tolerance))
                        return "out[" + std::to_string(y) + "][" + std::to_string(x) + "] = " + fmt("%.9g", o[e]) +
                               ", want " + fmt("%.9g", want);
                }
                return "";
            };
            run(c);
        }
    }

    void conv1d() {
        size_t n = pick(1u << 26, 1u << 24), r = 3, taps = 2 * r + 1;
        auto signal = random_f32(n, 14);
        auto filter = random_f32(taps, 15);
        auto in = upload(signal), out = device(4 * n);
        for (std::string k : {"conv1d", "conv1d_vec4"}) {
            Case c;
            c.kernel = k, c.size = "n=" + std::to_string(n) + " " + std::to_string(taps) + " taps";
            c.unit = "GB/s", c.work = 8.0 * n;
            // CONV1D_BLOCK threads; conv1d: an output each, vec4: CONV1D_VEC4_SPAN outputs a block.
            unsigned per_block = k == "conv1d" ? CONV_CONV1D_BLOCK : CONV_CONV1D_VEC4_SPAN;
            c.shape = {blocks(n, per_block), 1, CONV_CONV1D_BLOCK, 1, 0};
            c.args.slice(in, n).ptr(out).add(r);
            c.out = out, c.compare = Compare::Close, c.tolerance = 4.0 * taps * FLT_EPSILON;
            c.setup = [this, filter] { set_filter(filter); };
            double tolerance = c.tolerance;
            c.reference = [=, &signal](const std::vector<unsigned char>& bytes) -> std::string {
                const float* o = reinterpret_cast<const float*>(bytes.data());
                for (size_t i : sample_indices(n, 256, 16)) {
                    double want = 0;
                    for (size_t f = 0; f < taps; ++f) {
                        long g = (long)i + (long)f - (long)r;
                        if (g >= 0 && g < (long)n) want += (double)filter[f] * signal[g];
                    }
                    if (!(std::fabs(o[i] - want) <= tolerance))
                        return "out[" + std::to_string(i) + "] = " + fmt("%.9g", o[i]) + ", want " + fmt("%.9g", want);
                }
                return "";
            };
            run(c);
        }
    }

    void transpose() {
        size_t full_rows = pick(8192, 4096), full_cols = pick(8192, 4096);
        auto matrix = random_f32(full_rows * full_cols, 17);
        auto in = upload(matrix), out = device(4 * full_rows * full_cols);
        // convert_tf32_transposed (kernels/src/matmul/convert.rs) is the wide kernel rounding to
        // TF32 on the way out, at the host's conversion size (4096^2: the first elements of the
        // matrix); rows is a multiple of MATMUL_MMA_ROW_ALIGN, so its output is dense.
        for (std::string k : {"transpose_naive", "transpose_shared", "transpose_padded", "transpose_padded_64",
                              "convert_tf32_transposed"}) {
            bool convert = k == "convert_tf32_transposed", wide = convert || k == "transpose_padded_64";
            size_t rows = convert ? 4096 : full_rows, cols = convert ? 4096 : full_cols;
            Case c;
            c.kernel = k, c.size = std::to_string(rows) + "x" + std::to_string(cols);
            c.unit = "GB/s", c.work = 8.0 * rows * cols;
            // A TILE x TILE tile per TILE x BLOCK_ROWS block; the wide kernels: WIDE_TILE, WIDE_BLOCK_ROWS.
            unsigned tile = wide ? TRANSPOSE_WIDE_TILE : TRANSPOSE_TILE;
            unsigned block_rows = wide ? TRANSPOSE_WIDE_BLOCK_ROWS : TRANSPOSE_BLOCK_ROWS;
            c.shape = {blocks(cols, tile), blocks(rows, tile), tile, block_rows, 0};
            c.args.slice(in, rows * cols).ptr(out).add(rows).add(cols);
            c.out = out, c.compare = Compare::Exact;
            c.reference = [=, &matrix](const std::vector<unsigned char>& bytes) -> std::string {
                const float* o = reinterpret_cast<const float*>(bytes.data());
                for (size_t e : sample_indices(rows * cols, 4096, 18)) {
                    size_t r = e / cols, col = e % cols;
                    float want = convert ? round_tf32(matrix[e]) : matrix[e];
                    if (!(o[col * rows + r] == want))
                        return "out[" + std::to_string(col) + "][" + std::to_string(r) + "] = " +
                               fmt("%.9g", o[col * rows + r]) + ", want " + fmt("%.9g", want);
                }
                return "";
            };
            run(c);
        }
    }

    // Radix select's median of 2^22 values (host/src/ops/select.rs): each pass on its own (its
    // count, then its last block's find), the state it starts from prepared here from the
    // sorted keys. The median's first bucket is narrow, so the second pass gathers it and the
    // last reads the gathering (prepared here too).
    void select() {
        const size_t n = 1u << 22;
        auto vh = random_f32(n, 19);
        auto values = upload(vh);
        auto histogram = device(4 * SELECT_HISTOGRAM_LEN), state = device(4 * SELECT_STATE_WORDS);
        auto gathered = device(4 * SELECT_GATHER_CAP);
        const unsigned bits[3] = {SELECT_HIGH_BITS, SELECT_MIDDLE_BITS, SELECT_LOW_BITS};
        auto shift = [&](int pass) {
            unsigned s = 32;
            for (int p = 0; p <= pass; ++p) s -= bits[p];
            return s;
        };
        auto mask = [&](int pass) { return pass == 0 ? 0u : ~((1u << (shift(pass) + bits[pass])) - 1); };
        // The keys, sorted: the median's ranks give every pass's prefixes and ranks.
        std::vector<unsigned> keys(vh.size());
        for (size_t i = 0; i < vh.size(); ++i) {
            unsigned b;
            std::memcpy(&b, &vh[i], 4);
            keys[i] = b ^ ((unsigned)((int)b >> 31) | 0x80000000u);
        }
        std::sort(keys.begin(), keys.end());
        const unsigned ranks[2] = {(unsigned)((n - 1) / 2), (unsigned)(n / 2)};
        // The first pass's buckets: how many values they hold, and those values.
        unsigned first_prefix[2] = {};
        if (!keys.empty()) first_prefix[0] = keys[ranks[0]] & mask(1), first_prefix[1] = keys[ranks[1]] & mask(1);
        std::vector<float> bucket_values;
        for (float v : vh) {
            unsigned b;
            std::memcpy(&b, &v, 4);
            unsigned k = (b ^ ((unsigned)((int)b >> 31) | 0x80000000u)) & mask(1);
            if (k == first_prefix[0] || k == first_prefix[1]) bucket_values.push_back(v);
        }
        const bool gathers = bucket_values.size() <= SELECT_GATHER_CAP;
        // The state before each pass (index 3: after the last).
        std::vector<std::vector<unsigned>> states(4, std::vector<unsigned>(SELECT_STATE_WORDS, 0));
        for (int pass = 0; pass < 3 && !keys.empty(); ++pass) {
            std::vector<unsigned>& st = states[pass + 1];
            st[SELECT_STATE_COUNT] = (unsigned)n;
            unsigned next = pass == 2 ? ~0u : mask(pass + 1);
            unsigned found[2];
            for (int s = 0; s < 2; ++s) {
                found[s] = keys[ranks[s]] & next;
                size_t below = std::lower_bound(keys.begin(), keys.end(), found[s]) - keys.begin();
                st[SELECT_STATE_PREFIX + s] = found[s];
                st[SELECT_STATE_RANK + s] = ranks[s] - (unsigned)below;
            }
            st[SELECT_STATE_GATHERED] = !gathers ? SELECT_NOT_GATHERED : pass == 0 ? 0 : (unsigned)bucket_values.size();
        }
        if (gathers && !g_dry) CK(cuMemcpyHtoD(gathered->ptr, bucket_values.data(), 4 * bucket_values.size()));
        const double lo = -INFINITY, hi = INFINITY;
        unsigned grid = std::min<unsigned>(blocks(n / 4, SELECT_COUNT_BLOCK * SELECT_COUNT_QUADS), SELECT_COUNT_BLOCKS_PER_SM * sms);
        auto expect_words = [](std::vector<unsigned> want, size_t words, const char* what) {
            return [want, words, what](const std::vector<unsigned char>& out) -> std::string {
                for (size_t i = 0; i < words; ++i) {
                    unsigned v;
                    std::memcpy(&v, out.data() + 4 * i, 4);
                    if (v != want[i])
                        return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(v) + ", want " +
                               std::to_string(want[i]);
                }
                return "";
            };
        };
        // The last pass twice: on the gathering, and on every value (as a wide bucket has it).
        std::vector<unsigned> every_value = states[2];
        every_value[SELECT_STATE_GATHERED] = SELECT_NOT_GATHERED;
        std::vector<unsigned> every_value_after = states[3];
        every_value_after[SELECT_STATE_GATHERED] = SELECT_NOT_GATHERED;
        for (unsigned launch = 0; launch < 4; ++launch) {
            unsigned pass = std::min(launch, 2u);
            bool whole = launch == 3 || (launch == 2 && !gathers);
            if (launch == 3 && !gathers) break;
            Case c;
            c.kernel = "select_count_vec4", c.size = "n=" + std::to_string(n) + " pass " + std::to_string(pass);
            if (pass == 2) c.size += whole ? " (every value)" : " (gathered)";
            c.unit = "GB/s", c.work = 4.0 * n;
            c.shape = {grid, 1, SELECT_COUNT_BLOCK, 1, 0};
            c.args.slice(values, n).add(lo).add(hi).add(pass).add(0u).add((unsigned)SELECT_FIND_MEDIAN).ptr(state).ptr(histogram)
                .ptr(gathered);
            c.out = state, c.compare = Compare::Exact;
            // The pass's last block finds, zeroes the histogram and rewrites the state (its
            // ticket back at zero): the state before the pass is restored before each launch.
            std::vector<unsigned> before = whole && pass == 2 ? every_value : states[pass];
            c.reset = [histogram, state, before](CUstream s) {
                CK(cuMemsetD32Async(histogram->ptr, 0, SELECT_HISTOGRAM_LEN, s));
                CK(cuMemcpyHtoDAsync(state->ptr, before.data(), 4 * before.size(), s));
            };
            c.reference = expect_words(whole && pass == 2 ? every_value_after : states[pass + 1], SELECT_STATE_WORDS, "state");
            run(c);
        }
    }

    // The reduction ladder and the moments (kernels/src/reduce/): every kernel ends with the
    // last blocks' tickets, which self-reset, so the tickets are zeroed once per case.
    unsigned reduce_fill(size_t n, unsigned per_sm) const {
        size_t full = (size_t)per_sm * sms, needed = (n + REDUCE_VALUES_PER_PASS - 1) / REDUCE_VALUES_PER_PASS;
        return (unsigned)std::max<size_t>(1, std::min(full, needed));  // interface::reduce::grid_stride_blocks
    }

    void reduce() {
        size_t n = pick(1u << 28, 1u << 24);
        unsigned vec4_grid = reduce_fill(n, REDUCE_BLOCKS_PER_SM);
        unsigned moments_grid = reduce_fill(n, REDUCE_MOMENTS_BLOCKS_PER_SM);
        auto partials = device(8 * std::max<size_t>(blocks(n, REDUCE_BLOCK), REDUCE_MOMENTS_FIELDS * moments_grid));
        // interface::reduce::finish_tickets of the largest grid, steps 1 and 2's.
        size_t ticket_count = (blocks(n, REDUCE_BLOCK) + REDUCE_FINISH_GROUP - 1) / REDUCE_FINISH_GROUP + 1;
        auto tickets = device(4 * ticket_count), sum = device(8), moments = device(8 * REDUCE_MOMENTS_FIELDS);
        auto zero_tickets = [tickets, ticket_count] { CK(cuMemsetD32(tickets->ptr, 0, ticket_count)); };

        auto vh = random_f32(n, 19);
        auto values = upload(vh);
        double want = 0, magnitude = 0;
        for (float v : vh) want += v, magnitude += std::fabs(v);
        // host/src/ops/reduce.rs sum_tolerance: at most 9 f32 roundings per value, then f64.
        double tolerance = (9.0 * FLT_EPSILON + 1e-12) * magnitude;
        struct Step {
            const char* kernel;
            unsigned grid;
        };
        for (Step s : {Step{"reduce_interleaved", blocks(n, REDUCE_BLOCK)}, Step{"reduce_sequential", blocks(n, REDUCE_BLOCK)},
                       Step{"reduce_first_add", blocks(n, 2 * REDUCE_BLOCK)},
                       Step{"reduce_shuffle", blocks(n, 2 * REDUCE_BLOCK)}, Step{"reduce_vec4", vec4_grid}}) {
            Case c;
            c.kernel = s.kernel, c.size = "n=" + std::to_string(n), c.unit = "GB/s", c.work = 4.0 * n;
            c.shape = {s.grid, 1, REDUCE_BLOCK, 1, 0};
            c.args.slice(values, n).ptr(partials).ptr(tickets).ptr(sum);
            c.out = sum, c.compare = Compare::Exact, c.setup = zero_tickets;
            c.reference = [=](const std::vector<unsigned char>& out) -> std::string {
                double got;
                std::memcpy(&got, out.data(), 8);
                if (std::fabs(got - want) <= tolerance) return "";
                return "sum " + fmt("%.12g", got) + ", want " + fmt("%.12g", want) + " within " + fmt("%.3g", tolerance);
            };
            run(c);
        }

        // Moments: values far from zero, one in seven NaN, a window keeping about 60% of them.
        auto mh = random_f32(n, 20, 999.0f, 1001.0f);
        for (size_t i = 3; i < mh.size(); i += 7) mh[i] = NAN;
        auto mvalues = upload(mh);
        const double low = 999.5, high = 1000.75;
        double count = 0, nan = 0, total = 0, m2 = 0;
        for (float v : mh) {
            if (std::isnan(v)) ++nan;
            else if (low < v && v < high) ++count, total += v;
        }
        double mean = total / count;
        for (float v : mh)
            if (low < v && v < high) m2 += ((double)v - mean) * ((double)v - mean);
        Case c;
        c.kernel = "reduce_moments", c.size = "n=" + std::to_string(n) + " window", c.unit = "GB/s", c.work = 4.0 * n;
        c.shape = {moments_grid, 1, REDUCE_BLOCK, 1, 0};
        c.args.slice(mvalues, n).add(low).add(high).ptr(partials).ptr(tickets).ptr(moments);
        c.out = moments, c.compare = Compare::Exact, c.setup = zero_tickets;
        c.reference = [=](const std::vector<unsigned char>& out) -> std::string {
            double f[REDUCE_MOMENTS_FIELDS];
            std::memcpy(f, out.data(), sizeof f);
            // host/src/ops/reduce.rs MOMENTS_RELATIVE: both sides in f64.
            bool ok = f[REDUCE_MOMENTS_COUNT] == count && f[REDUCE_MOMENTS_NAN] == nan &&
                      std::fabs(f[REDUCE_MOMENTS_MEAN] - mean) <= 1e-9 * std::fabs(mean) &&
                      std::fabs(f[REDUCE_MOMENTS_M2] - m2) <= 1e-9 * m2;
            if (ok) return "";
            return "count " + fmt("%.0f", f[REDUCE_MOMENTS_COUNT]) + " nan " + fmt("%.0f", f[REDUCE_MOMENTS_NAN]) +
                   " mean " + fmt("%.15g", f[REDUCE_MOMENTS_MEAN]) + " M2 " + fmt("%.15g", f[REDUCE_MOMENTS_M2]) +
                   ", want " + fmt("%.0f", count) + " " + fmt("%.0f", nan) + " " + fmt("%.15g", mean) + " " +
                   fmt("%.15g", m2);
        };
        run(c);
    }

    // ---- label and measure (kernels/src/label.rs, measure.rs) on a sky-like image: noise that
    // never reaches the level, Gaussian sources, and a ring crossing many tiles. The state each
    // kernel starts from is prepared here, on the CPU.

    static constexpr double kLabelLevel = 1.5;

    std::vector<float> label_image(size_t side, uint64_t seed) {
        auto image = random_f32(side * side, seed);  // [-1, 1): never above the level
        if (g_dry) return image;
        uint64_t s = seed ^ 0x5CA1AB1Eull;
        auto uniform = [&] { return (double)(splitmix(s) >> 40) * 0x1p-24; };
        for (int k = 0; k < 300; ++k) {
            double cx = uniform() * side, cy = uniform() * side, sigma = 1 + 7 * uniform(), peak = 2 + 8 * uniform();
            long reach = (long)(4 * sigma) + 1;
            for (long y = (long)cy - reach; y <= (long)cy + reach; ++y)
                for (long x = (long)cx - reach; x <= (long)cx + reach; ++x)
                    if (y >= 0 && x >= 0 && y < (long)side && x < (long)side) {
                        double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
                        image[y * side + x] += (float)(peak * std::exp(-d2 / (2 * sigma * sigma)));
                    }
        }
        double radius = side / 4.0, centre = side / 2.0;
        for (size_t y = 0; y < side; ++y)
            for (size_t x = 0; x < side; ++x) {
                double r = std::hypot(x - centre, y - centre);
                if (std::fabs(r - radius) < 1.5) image[y * side + x] += 3.0f;
            }
        return image;
    }

    // Each detected pixel's root, its component's smallest raster index (within its tile only
    // when `tiled`: what label_tiles leaves); LABEL_BACKGROUND elsewhere.
    static std::vector<unsigned> cpu_roots(const std::vector<float>& image, size_t w, size_t h, bool eight,
                                           bool tiled) {
        std::vector<unsigned> p(w * h, LABEL_BACKGROUND);
        auto find = [&](unsigned x) {
            while (p[x] != x) x = p[x] = p[p[x]];
            return x;
        };
        auto tile = [&](size_t r, size_t c) {
            return tiled ? (r / LABEL_TILE_HEIGHT) * 1000003 + c / LABEL_TILE_WIDTH : 0;
        };
        for (size_t r = 0; r < h; ++r)
            for (size_t c = 0; c < w; ++c) {
                size_t i = r * w + c;
                if (!((double)image[i] > kLabelLevel)) continue;
                p[i] = (unsigned)i;
                const long nb[4][2] = {{0, -1}, {-1, 0}, {-1, -1}, {-1, 1}};
                for (int k = 0; k < (eight ? 4 : 2); ++k) {
                    long rr = (long)r + nb[k][0], cc = (long)c + nb[k][1];
                    if (rr < 0 || cc < 0 || cc >= (long)w || tile(rr, cc) != tile(r, c)) continue;
                    size_t j = rr * w + cc;
                    if (p[j] == LABEL_BACKGROUND) continue;
                    unsigned a = find((unsigned)i), b = find((unsigned)j);
                    if (a < b) p[b] = a;
                    else if (b < a) p[a] = b;
                }
            }
        for (size_t i = 0; i < p.size(); ++i)
            if (p[i] != LABEL_BACKGROUND) p[i] = find((unsigned)i);
        return p;
    }

    static std::string first_difference(const unsigned* got, const std::vector<unsigned>& want, const char* what) {
        for (size_t i = 0; i < want.size(); ++i)
            if (got[i] != want[i])
                return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", want " +
                       std::to_string(want[i]);
        return "";
    }

    void label() {
        size_t side = pick(2048, 512), n = side * side;
        auto image_host = label_image(side, 19);
        auto image = upload(image_host);
        std::string size = std::to_string(side) + "x" + std::to_string(side);
        Shape tiles{blocks(side, LABEL_TILE_WIDTH), blocks(side, LABEL_TILE_HEIGHT), LABEL_TILE_WIDTH,
                    LABEL_TILE_HEIGHT, 0};
        Shape merge{tiles.gx, tiles.gy, LABEL_MERGE_BLOCK, 1, 0};
        // Edge pixels the merge reads: each tile's top row and left column.
        double edges = (double)tiles.gx * tiles.gy * (LABEL_TILE_WIDTH + LABEL_TILE_HEIGHT);
        for (unsigned connectivity : {4u, 8u}) {
            bool eight = connectivity == 8;
            std::vector<unsigned> tiled, roots;
            if (!g_dry) tiled = cpu_roots(image_host, side, side, eight, true);
            if (!g_dry) roots = cpu_roots(image_host, side, side, eight, false);
            std::string shape = size + " " + std::to_string(connectivity) + "-conn";

            auto labels = device(4 * n);
            Case t;
            t.kernel = "label_tiles", t.size = shape, t.unit = "GB/s", t.work = 8.0 * n;
            t.shape = tiles;
            t.args.slice(image, n).add(side).add(side).add(kLabelLevel).add(connectivity).ptr(labels);
            t.out = labels, t.compare = Compare::Exact;
            t.reference = [tiled](const std::vector<unsigned char>& out) {
                return first_difference(reinterpret_cast<const unsigned*>(out.data()), tiled, "parent");
            };
            run(t);

            // From the tiles' parents; which racing join wins differs, the roots reached do not.
            auto tiled_buffer = upload(tiled);
            Case m;
            m.kernel = "label_merge", m.size = shape, m.unit = "GB/s", m.work = 8.0 * edges;
            m.shape = merge;
            m.args.add(side).add(side).add(connectivity).ptr(labels);
            m.out = labels, m.compare = Compare::Reference;
            m.reset = [labels, tiled_buffer](CUstream s) {
                CK(cuMemcpyDtoDAsync(labels->ptr, tiled_buffer->ptr, labels->bytes, s));
            };
            m.reference = [roots](const std::vector<unsigned char>& out) -> std::string {
                const unsigned* p = reinterpret_cast<const unsigned*>(out.data());
                for (size_t i = 0; i < roots.size(); ++i) {
                    unsigned x = (unsigned)i;
                    if (p[x] != LABEL_BACKGROUND)
                        while (p[x] != x) x = p[x];
                    unsigned got = p[i] == LABEL_BACKGROUND ? LABEL_BACKGROUND : x;
                    if (got != roots[i])
                        return "root of " + std::to_string(i) + " = " + std::to_string(got) + ", want " +
                               std::to_string(roots[i]);
                }
                return "";
            };
            run(m);
            if (eight) continue;  // flatten and renumber do not depend on the connectivity

            // Flatten from a merged state: each tile root points at its component's root.
            std::vector<unsigned> merged = tiled, marks(n, 0), ranks(n, 0), want_labels(n, 0);
            unsigned count = 0;
            for (size_t i = 0; i < n && !g_dry; ++i) {
                if (tiled[i] == i) merged[i] = roots[i];
                marks[i] = roots[i] == i;
                ranks[i] = count;
                count += marks[i];
            }
            for (size_t i = 0; i < n && !g_dry; ++i)
                want_labels[i] = roots[i] == LABEL_BACKGROUND ? 0 : ranks[roots[i]] + 1;
            auto merged_buffer = upload(merged);
            auto both = device(8 * n);  // the labels, then the root marks
            Case f;
            f.kernel = "label_flatten", f.size = size, f.unit = "GB/s", f.work = 12.0 * n;
            f.shape = linear(n, LABEL_BLOCK);
            f.args.ptr(both).add<CUdeviceptr>(both->ptr + 4 * n).add(n);
            f.out = both, f.compare = Compare::Exact;
            f.reset = [both, merged_buffer, n](CUstream s) {
                CK(cuMemcpyDtoDAsync(both->ptr, merged_buffer->ptr, 4 * n, s));
                CK(cuMemsetD32Async(both->ptr + 4 * n, 0xFFFFFFFFu, n, s));
            };
            f.reference = [roots, marks, n](const std::vector<unsigned char>& out) {
                const unsigned* o = reinterpret_cast<const unsigned*>(out.data());
                std::string problem = first_difference(o, roots, "root");
                return problem.empty() ? first_difference(o + n, marks, "mark") : problem;
            };
            run(f);

            auto roots_buffer = upload(roots), ranks_buffer = upload(ranks);
            auto renumbered = device(4 * (n + 1));  // the labels, then the count
            std::vector<unsigned> want = want_labels;
            want.push_back(count);
            Case r;
            r.kernel = "label_renumber", r.size = size, r.unit = "GB/s", r.work = 12.0 * n;
            r.shape = linear(n, LABEL_BLOCK);
            r.args.ptr(renumbered).slice(ranks_buffer, n).add<CUdeviceptr>(renumbered->ptr + 4 * n);
            r.out = renumbered, r.compare = Compare::Exact;
            r.reset = [renumbered, roots_buffer, n](CUstream s) {
                CK(cuMemcpyDtoDAsync(renumbered->ptr, roots_buffer->ptr, 4 * n, s));
                CK(cuMemsetD32Async(renumbered->ptr + 4 * n, 0xFFFFFFFFu, 1, s));
            };
            r.reference = [want](const std::vector<unsigned char>& out) {
                return first_difference(reinterpret_cast<const unsigned*>(out.data()), want, "label");
            };
            run(r);

            measure(image_host, image, want_labels, count, side);
        }
    }

    // measure_labels on the labels of label(): records compared with f64 sums in raster order.
    void measure(const std::vector<float>& image_host, const Buffer& image, const std::vector<unsigned>& labels_host,
                 unsigned count, size_t side) {
        size_t n = side * side, words = (size_t)count * MEASURE_RECORD_WORDS;
        auto labels = upload(labels_host);
        auto records = device(8 * std::max<size_t>(words, 1));
        std::vector<double> want(words, 0.0);
        for (size_t i = 0; i < n && !g_dry; ++i) {
            if (labels_host[i] == 0) continue;
            double* w = &want[(labels_host[i] - 1) * MEASURE_RECORD_WORDS];
            double v = image_host[i];
            w[0] += v, w[1] += v * (double)(i / side), w[2] += v * (double)(i % side);
        }
        Case c;
        c.kernel = "measure_labels", c.size = std::to_string(side) + "x" + std::to_string(side);
        c.unit = "GB/s", c.work = 8.0 * n;
        c.shape = linear(blocks(side, MEASURE_ITEMS) * side, MEASURE_BLOCK);
        c.args.slice(image, n).slice(labels, n).add(side).add(side).ptr(records).add(count);
        c.out = records, c.compare = Compare::Reference;
        c.reset = [records](CUstream s) { CK(cuMemsetD8Async(records->ptr, 0, records->bytes, s)); };
        c.reference = [want, count](const std::vector<unsigned char>& out) -> std::string {
            const double* o = reinterpret_cast<const double*>(out.data());
            for (size_t l = 0; l < count; ++l)
                for (size_t k = 0; k < 3; ++k) {
                    double got = o[l * MEASURE_RECORD_WORDS + k], w = want[l * MEASURE_RECORD_WORDS + k];
                    if (!(std::fabs(got - w) <= 1e-9 * std::fabs(w) + 1e-9))
                        return "label " + std::to_string(l + 1) + " sum " + std::to_string(k) + " = " +
                               fmt("%.17g", got) + ", want " + fmt("%.17g", w);
                }
            return "";
        };
        run(c);
    }

    // ---- fit (kernels/src/fit.rs) on a 2048² field of FIT_LISTED_ISLANDS elliptical Gaussians,
    // one per 64-pixel cell (every fourth cell a pair 7 pixels apart, the second at 0.6 of the
    // first's peak), in uniform noise of ±0.002 far below the islands' level of 0.02; an island is
    // its cell's pixels above the level. Each kernel's fits must find every source (centre
    // within 0.05 pixel, peak within 2%, no flag), and the twin's must equal the Rust kernel's
    // within 1e-6 (status words exact but the iterations).
    void fit() {
        const size_t cells = 32, cell = 64, side = cells * cell, n = side * side, count = cells * cells;
        const double level = 0.02, amplitude = 0.002;
        struct Gaussian {
            double peak, x, y, major, minor, theta;
        };
        std::vector<std::vector<Gaussian>> truth(count);
        std::vector<float> image = random_f32(n, 41);
        std::vector<unsigned> labels(g_dry ? 0 : n, 0), islands(count * FIT_ISLAND_WORDS, 0);
        double box_pixels = 0;
        uint64_t s = 0xF17Full;
        auto uniform = [&] { return (double)(splitmix(s) >> 40) * 0x1p-24; };
        for (size_t i = 0; i < count && !g_dry; ++i) {
            size_t x0 = i % cells * cell, y0 = i / cells * cell;
            double x = x0 + 28 + 8 * uniform(), y = y0 + 28 + 8 * uniform(), peak = 1 + 9 * uniform();
            bool pair = i % 4 == 3;
            // Every minor axis above the fit's least, 0.8 of the beam's σ of 1 pixel passed below.
            double major = pair ? 1 + 0.8 * uniform() : 1.2 + 1.8 * uniform();
            double minor = major * (pair ? 0.8 + 0.2 * uniform() : 0.7 + 0.3 * uniform());
            truth[i].push_back({peak, x, y, major, minor, 3 * (uniform() - 0.5)});
            if (pair) {
                double second = 1 + 0.8 * uniform();
                truth[i].push_back({0.6 * peak, x + 7, y + 1, second, second * (0.8 + 0.2 * uniform()), 3 * (uniform() - 0.5)});
            }
            unsigned y_min = ~0u, y_max = 0, x_min = ~0u, x_max = 0;
            for (size_t r = y0; r < y0 + cell; ++r)
                for (size_t c = x0; c < x0 + cell; ++c) {
                    double v = amplitude * image[r * side + c];
                    for (const Gaussian& g : truth[i]) {
                        double cs = std::cos(g.theta), sn = std::sin(g.theta), dx = c - g.x, dy = r - g.y;
                        double along = dx * cs + dy * sn, across = dy * cs - dx * sn;
                        v += g.peak * std::exp(-0.5 * (along * along / (g.major * g.major) +
                                                       across * across / (g.minor * g.minor)));
                    }
                    image[r * side + c] = (float)v;
                    if ((double)image[r * side + c] <= level) continue;
                    labels[r * side + c] = (unsigned)i + 1;
                    y_min = std::min(y_min, (unsigned)r), y_max = std::max(y_max, (unsigned)r);
                    x_min = std::min(x_min, (unsigned)c), x_max = std::max(x_max, (unsigned)c);
                }
            unsigned* record = &islands[i * FIT_ISLAND_WORDS];
            record[FIT_ISLAND_LABEL] = (unsigned)i + 1;
            record[FIT_ISLAND_Y_MIN] = y_min, record[FIT_ISLAND_Y_MAX] = y_max;
            record[FIT_ISLAND_X_MIN] = x_min, record[FIT_ISLAND_X_MAX] = x_max;
            box_pixels += (double)(y_max - y_min + 1) * (x_max - x_min + 1);
        }
        // The noise's σ, uniform in ±amplitude: amplitude / sqrt(3).
        std::vector<float> noise(count, (float)(amplitude / std::sqrt(3.0)));
        auto image_buffer = upload(image), labels_buffer = upload(labels), islands_buffer = upload(islands),
             noise_buffer = upload(noise);
        size_t fit_bytes = 8 * count * FIT_RECORD_WORDS, status_bytes = 4 * count * FIT_STATUS_WORDS;
        auto out = device(fit_bytes + status_bytes);  // the fits, then the status
        Case c;
        c.kernel = "fit_islands", c.size = std::to_string(side) + "x" + std::to_string(side) + " " +
                                           std::to_string(count) + " islands";
        c.unit = "GB/s", c.work = 8.0 * box_pixels;  // the boxes' pixels and labels, read once
        c.shape = {(unsigned)count, 1, FIT_BLOCK, 1, FIT_SHARED_BYTES};
        c.args.ptr(image_buffer).ptr(labels_buffer).ptr(noise_buffer).add<unsigned>(0).add(side).add(side);
        c.args.slice(islands_buffer, count * FIT_ISLAND_WORDS).add(5.0).add(1.0).ptr(out).add<CUdeviceptr>(out->ptr + fit_bytes);
        c.out = out, c.compare = Compare::Reference;
        // Called with the Rust kernel's result, then the twin's: the first is kept to judge the second.
        auto rust = std::make_shared<std::vector<unsigned char>>();
        c.reference = [truth, count, fit_bytes, rust](const std::vector<unsigned char>& out) -> std::string {
            const double* fits = reinterpret_cast<const double*>(out.data());
            const unsigned* status = reinterpret_cast<const unsigned*>(out.data() + fit_bytes);
            for (size_t i = 0; i < count; ++i) {
                const unsigned* st = status + i * FIT_STATUS_WORDS;
                if (st[FIT_STATUS_FLAGS] != 0 || st[FIT_STATUS_COMPONENTS] != truth[i].size())
                    return "island " + std::to_string(i + 1) + ": flags " + std::to_string(st[FIT_STATUS_FLAGS]) + ", " +
                           std::to_string(st[FIT_STATUS_COMPONENTS]) + " components, want none and " +
                           std::to_string(truth[i].size());
                for (size_t k = 0; k < truth[i].size(); ++k) {
                    const double* p = fits + i * FIT_RECORD_WORDS + FIT_COMPONENTS + k * FIT_COMPONENT_WORDS;
                    const Gaussian& g = truth[i][k];
                    if (!(std::fabs(p[FIT_X] - g.x) < 0.05 && std::fabs(p[FIT_Y] - g.y) < 0.05 &&
                          std::fabs(p[FIT_PEAK] / g.peak - 1) < 0.02))
                        return "island " + std::to_string(i + 1) + " component " + std::to_string(k) + ": peak " +
                               fmt("%.6g", p[FIT_PEAK]) + " at (" + fmt("%.4f", p[FIT_X]) + ", " + fmt("%.4f", p[FIT_Y]) +
                               "), drawn " + fmt("%.6g", g.peak) + " at (" + fmt("%.4f", g.x) + ", " + fmt("%.4f", g.y) + ")";
                }
            }
            if (rust->empty()) {
                *rust = out;
                return "";
            }
            const double* want = reinterpret_cast<const double*>(rust->data());
            const unsigned* want_status = reinterpret_cast<const unsigned*>(rust->data() + fit_bytes);
            for (size_t w = 0; w < count * FIT_STATUS_WORDS; ++w)
                if (w % FIT_STATUS_WORDS != FIT_STATUS_ITERATIONS && status[w] != want_status[w])
                    return "status word " + std::to_string(w) + " differs from the Rust kernel's";
            for (size_t w = 0; w < count * FIT_RECORD_WORDS; ++w) {
                double a = fits[w], b = want[w];
                if (!(std::isnan(a) && std::isnan(b)) && !(std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b))))
                    return "fit word " + std::to_string(w) + " = " + fmt("%.17g", a) + ", the Rust kernel's " +
                           fmt("%.17g", b);
            }
            return "";
        };
        run(c);
    }

    // ---- background (kernels/src/background.rs) on label()'s sky with a blanked corner, at
    // BANE's default grid step (16) and box (96), as host/src/ops/background.rs's default run.
    // Both kernels round the same f64 operations in the same order, so they must write the
    // same bits; sampled grid points are checked against a CPU sort-and-clip (plain sums in
    // another order, so within 1e-9), sampled pixels against a CPU interpolation of the grid.
    // Neither the boxes' counts nor the mask is asked for.

    static constexpr unsigned kBackgroundStep = 16, kBackgroundBox = 96;

    static unsigned bg_points(unsigned extent, unsigned step) { return extent <= 1 ? 1 : (extent - 2) / step + 2; }
    static unsigned bg_coordinate(unsigned i, unsigned extent, unsigned step) {
        return i + 1 >= bg_points(extent, step) ? extent - 1 : i * step;
    }

    // The σ-clipped median and standard deviation of the box around grid point (gy, gx).
    static void bg_point(const std::vector<float>& image, size_t side, unsigned gy, unsigned gx, double& middle,
                         double& sigma) {
        unsigned s = (unsigned)side, half = kBackgroundBox / 2;
        unsigned cx = bg_coordinate(gx, s, kBackgroundStep), cy = bg_coordinate(gy, s, kBackgroundStep);
        unsigned x0 = cx > half ? cx - half : 0, y0 = cy > half ? cy - half : 0;
        unsigned x1 = std::min(s, cx + kBackgroundBox - half), y1 = std::min(s, cy + kBackgroundBox - half);
        std::vector<double> v;
        for (unsigned y = y0; y < y1; ++y)
            for (unsigned x = x0; x < x1; ++x)
                if (std::isfinite(image[(size_t)y * side + x])) v.push_back(image[(size_t)y * side + x]);
        if (v.empty()) {
            middle = sigma = NAN;
            return;
        }
        std::sort(v.begin(), v.end());
        auto stats = [&](size_t a, size_t b) {
            double sum = 0, squares = 0;
            for (size_t i = a; i < b; ++i) sum += v[i];
            double mean = sum / (double)(b - a);
            for (size_t i = a; i < b; ++i) squares += (v[i] - mean) * (v[i] - mean);
            sigma = std::sqrt(squares / (double)(b - a));
            middle = (v[a + (b - a - 1) / 2] + v[a + (b - a) / 2]) / 2;
        };
        size_t a = 0, b = v.size();
        stats(a, b);
        for (int round = 0; round < 10; ++round) {
            double low = middle - 3 * sigma, high = middle + 3 * sigma;
            size_t first = std::upper_bound(v.begin() + a, v.begin() + b, low) - v.begin();
            size_t end = std::lower_bound(v.begin() + first, v.begin() + b, high) - v.begin();
            if (end == first || end - first == b - a) break;
            a = first, b = end;
            stats(a, b);
        }
    }

    void background() {
        size_t side = pick(2048, 512), n = side * side;
        auto image_host = label_image(side, 23);
        for (size_t y = 0; y < side && !g_dry; ++y)
            for (size_t x = 0; x + y < side / 4; ++x) image_host[y * side + x] = NAN;
        auto image = upload(image_host);
        unsigned points_side = bg_points((unsigned)side, kBackgroundStep);
        size_t points = (size_t)points_side * points_side, values = points * BACKGROUND_FIELDS;
        std::string size = std::to_string(side) + "x" + std::to_string(side);
        auto grid = device(8 * values);
        Case g;
        g.kernel = "background_grid", g.size = size, g.unit = "GB/s", g.work = 4.0 * n;
        g.shape = {(unsigned)points, 1, BACKGROUND_THREADS, 1, BACKGROUND_SHARED_HEADER + 4 * kBackgroundBox * kBackgroundBox};
        g.args.slice(image, n).add(side).add(side).add(kBackgroundStep).add(kBackgroundStep).add(kBackgroundBox)
            .add(kBackgroundBox).add(3.0).add(10u).ptr(grid).add<CUdeviceptr>(0).add<CUdeviceptr>(0);
        g.out = grid, g.compare = Compare::Exact;
        g.reference = [image_host, side, points_side](const std::vector<unsigned char>& out) -> std::string {
            const double* o = reinterpret_cast<const double*>(out.data());
            uint64_t s = 0xBA4E;
            for (int k = 0; k < 64; ++k) {
                unsigned gy = (unsigned)(splitmix(s) % points_side), gx = k == 0 ? 0 : (unsigned)(splitmix(s) % points_side);
                double middle, sigma;
                bg_point(image_host, side, gy, gx, middle, sigma);
                const double* got = o + ((size_t)gy * points_side + gx) * BACKGROUND_FIELDS;
                bool nan = std::isnan(middle) && std::isnan(got[BACKGROUND_BACKGROUND]) && std::isnan(got[BACKGROUND_NOISE]);
                bool ok = nan || (got[BACKGROUND_BACKGROUND] == middle &&
                                  std::fabs(got[BACKGROUND_NOISE] - sigma) <= 1e-9 * sigma);
                if (!ok)
                    return "grid point (" + std::to_string(gy) + ", " + std::to_string(gx) + ") = " +
                           fmt("%.17g", got[BACKGROUND_BACKGROUND]) + ", " + fmt("%.17g", got[BACKGROUND_NOISE]) +
                           ", want " + fmt("%.17g", middle) + ", " + fmt("%.17g", sigma);
            }
            return "";
        };
        run(g);

        // The interpolation reads a grid the Rust grid kernel writes once, before the case.
        auto made = device(8 * values), maps = device(12 * n);
        Case p;
        p.kernel = "background_interpolate", p.size = size, p.unit = "GB/s", p.work = 16.0 * n + 8.0 * values;
        p.shape = linear(n, BACKGROUND_INTERPOLATE_BLOCK);
        p.args.slice(image, n).add(side).add(side).add(kBackgroundStep).add(kBackgroundStep).slice(made, values)
            .add<CUdeviceptr>(maps->ptr).add<CUdeviceptr>(maps->ptr + 4 * n).add<CUdeviceptr>(maps->ptr + 8 * n)
            .add(0.0).add<CUdeviceptr>(0).add<CUdeviceptr>(0).add<CUdeviceptr>(0);
        p.out = maps, p.compare = Compare::Exact;
        Case fill = g;
        fill.args = Args();
        fill.args.slice(image, n).add(side).add(side).add(kBackgroundStep).add(kBackgroundStep).add(kBackgroundBox)
            .add(kBackgroundBox).add(3.0).add(10u).ptr(made).add<CUdeviceptr>(0).add<CUdeviceptr>(0);
        p.setup = [this, fill]() mutable {
            CUresult r;
            CUfunction f = function(rust, "background_grid", r);
            CK(r);
            launch(f, fill);
            CK(cuStreamSynchronize(stream));
        };
        p.reference = [this, image_host, side, made, values, n](const std::vector<unsigned char>& out) -> std::string {
            std::vector<double> grid_host(values);
            CK(cuMemcpyDtoH(grid_host.data(), made->ptr, 8 * values));
            const float* o = reinterpret_cast<const float*>(out.data());
            unsigned s = (unsigned)side, points = bg_points(s, kBackgroundStep);
            uint64_t seed = 0x1A7E;
            for (int k = 0; k < 4096; ++k) {
                size_t i = k == 0 ? n - 1 : splitmix(seed) % n;
                unsigned y = (unsigned)(i / side), x = (unsigned)(i % side);
                double want[2] = {NAN, NAN};
                if (std::isfinite(image_host[i])) {
                    auto cell = [&](unsigned q, unsigned& lower, unsigned& upper) {
                        lower = std::min(q / kBackgroundStep, points - 2);
                        upper = lower + 1;
                        unsigned first = lower * kBackgroundStep, second = bg_coordinate(upper, s, kBackgroundStep);
                        return (double)(q - first) / (double)(second - first);
                    };
                    unsigned r0, r1, c0, c1;
                    double fy = cell(y, r0, r1), fx = cell(x, c0, c1);
                    double w[4] = {(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx};
                    size_t corner[4] = {(size_t)r0 * points + c0, (size_t)r0 * points + c1, (size_t)r1 * points + c0,
                                        (size_t)r1 * points + c1};
                    for (int field = 0; field < 2; ++field) {
                        double sum = 0, total = 0;
                        for (int c = 0; c < 4; ++c) {
                            double v = grid_host[corner[c] * BACKGROUND_FIELDS + field];
                            if (w[c] > 0 && !std::isnan(v)) sum += w[c] * v, total += w[c];
                        }
                        want[field] = total > 0 ? sum / total : NAN;
                    }
                }
                for (int field = 0; field < 2; ++field) {
                    float got = o[field * n + i];
                    bool ok = std::isnan(want[field]) ? std::isnan(got)
                                                      : std::fabs(got - want[field]) <= 1e-6 * std::fabs(want[field]) + 1e-12;
                    if (!ok)
                        return std::string(field == 0 ? "background" : "noise") + "[" + std::to_string(i) + "] = " +
                               fmt("%.9g", got) + ", want " + fmt("%.9g", want[field]);
                }
            }
            return "";
        };
        run(p);

        // The least noise within a box (6 points) of each point of the grid made above, as the
        // source finder's second pass takes it; checked at sampled points against a CPU minimum.
        unsigned reach = kBackgroundBox / kBackgroundStep;
        auto sky = device(8 * values);
        Case q;
        q.kernel = "background_least_noise", q.size = size, q.unit = "GB/s", q.work = 16.0 * values;
        q.shape = linear(points, BACKGROUND_LEAST_NOISE_BLOCK);
        q.args.slice(made, values).add(points_side).add(points_side).add(reach).add(reach).ptr(sky);
        q.out = sky, q.compare = Compare::Exact;
        q.setup = p.setup;
        q.reference = [this, made, values, points_side, reach](const std::vector<unsigned char>& out) -> std::string {
            std::vector<double> grid_host(values);
            CK(cuMemcpyDtoH(grid_host.data(), made->ptr, 8 * values));
            const double* o = reinterpret_cast<const double*>(out.data());
            uint64_t seed = 0x5C1E;
            for (int k = 0; k < 4096; ++k) {
                unsigned gy = (unsigned)(splitmix(seed) % points_side), gx = (unsigned)(splitmix(seed) % points_side);
                double least = NAN;
                for (unsigned r = gy > reach ? gy - reach : 0; r <= std::min(points_side - 1, gy + reach); ++r)
                    for (unsigned c = gx > reach ? gx - reach : 0; c <= std::min(points_side - 1, gx + reach); ++c)
                        least = std::fmin(least, grid_host[((size_t)r * points_side + c) * BACKGROUND_FIELDS + BACKGROUND_NOISE]);
                // The background is copied, NaN too (a box of the blanked corner): the same bits.
                size_t at = ((size_t)gy * points_side + gx) * BACKGROUND_FIELDS;
                double got = o[at + BACKGROUND_NOISE];
                bool same_noise = std::isnan(least) ? std::isnan(got) : got == least;
                bool same_background =
                    std::memcmp(o + at + BACKGROUND_BACKGROUND, &grid_host[at + BACKGROUND_BACKGROUND], 8) == 0;
                if (!same_noise || !same_background)
                    return "point (" + std::to_string(gy) + ", " + std::to_string(gx) + ") = " +
                           fmt("%.17g", o[at + BACKGROUND_BACKGROUND]) + ", " + fmt("%.17g", got) + ", want " +
                           fmt("%.17g", grid_host[at + BACKGROUND_BACKGROUND]) + ", " + fmt("%.17g", least);
            }
            return "";
        };
        run(q);

        // The second pass's filling, on that grid: the boxes of a disc of points about the
        // centre lost three quarters of their pixels (dropped) and every seventh point of its
        // middle row half (kept); the grid is restored before each launch. Checked against the
        // CPU's drop and rounds, bit for bit.
        unsigned grid_points = points_side * points_side;
        std::vector<unsigned> before(grid_points, 3600), after(grid_points, 3600);
        double radius = points_side / 6.0, middle = points_side / 2.0;
        for (unsigned p = 0; p < grid_points; ++p) {
            double dy = p / points_side - middle, dx = p % points_side - middle;
            if (p / points_side == points_side / 2 && p % 7 == 0)
                after[p] = 1800;
            else if (dy * dy + dx * dx <= radius * radius)
                after[p] = 900;
        }
        auto counted_before = upload(before), counted_after = upload(after);
        auto filled = device(8 * values), lists = device(8 * (size_t)grid_points), means = device(8 * (size_t)grid_points);
        Case f;
        f.kernel = "background_fill", f.size = size, f.unit = "GB/s", f.work = 32.0 * values + 8.0 * grid_points;
        f.shape = Shape{1, 1, BACKGROUND_FILL_BLOCK, 1, 0};
        f.args.ptr(filled).slice(made, values).slice(counted_before, grid_points).slice(counted_after, grid_points);
        f.args.add(grid_points).add(points_side).add(0.5).ptr(lists).ptr(means);
        f.reset = [filled, made](CUstream s) { CK(cuMemcpyDtoDAsync(filled->ptr, made->ptr, filled->bytes, s)); };
        f.out = filled, f.compare = Compare::Exact;
        f.setup = p.setup;
        f.reference = [this, made, values, points_side, before, after](const std::vector<unsigned char>& out) -> std::string {
            std::vector<double> first(values);
            CK(cuMemcpyDtoH(first.data(), made->ptr, 8 * values));
            std::vector<double> want = first;
            unsigned n = points_side * points_side;
            for (unsigned p = 0; p < n; ++p)
                if ((double)(before[p] - after[p]) > 0.5 * (double)before[p])
                    want[2 * (size_t)p] = want[2 * (size_t)p + 1] = NAN;
            for (int field = 0; field < 2; ++field) {
                std::vector<unsigned> empty;
                for (unsigned p = 0; p < n; ++p)
                    if (std::isnan(want[2 * (size_t)p + field]) && !std::isnan(first[2 * (size_t)p + field])) empty.push_back(p);
                while (!empty.empty()) {
                    std::vector<double> mean(empty.size(), NAN);
                    std::vector<bool> has(empty.size(), false);
                    bool any = false;
                    for (size_t i = 0; i < empty.size(); ++i) {
                        unsigned r = empty[i] / points_side, c = empty[i] % points_side, count = 0;
                        double sum = 0.0;
                        for (unsigned nr = r > 0 ? r - 1 : 0; nr < std::min(r + 2, points_side); ++nr)
                            for (unsigned nc = c > 0 ? c - 1 : 0; nc < std::min(c + 2, points_side); ++nc) {
                                double v = want[2 * ((size_t)nr * points_side + nc) + field];
                                if (!std::isnan(v)) sum += v, count += 1;
                            }
                        if (count > 0) mean[i] = sum / count, has[i] = any = true;
                    }
                    std::vector<unsigned> rest;
                    for (size_t i = 0; i < empty.size(); ++i) {
                        double& at = want[2 * (size_t)empty[i] + field];
                        if (!any) at = first[2 * (size_t)empty[i] + field];
                        else if (has[i]) at = mean[i];
                        else rest.push_back(empty[i]);
                    }
                    if (!any) break;
                    empty = rest;
                }
            }
            const double* o = reinterpret_cast<const double*>(out.data());
            for (size_t i = 0; i < values; ++i)
                if (std::memcmp(o + i, &want[i], 8) != 0 && !(std::isnan(o[i]) && std::isnan(want[i])))
                    return "value " + std::to_string(i) + " = " + fmt("%.17g", o[i]) + ", want " + fmt("%.17g", want[i]);
            return "";
        };
        run(f);
    }

#if CUDA_VERSION >= 12000
    // x rounded to bf16 or IEEE half (to nearest even; the inputs are finite and in [-1, 1)),
    // as bits, and the value of those bits: host/src/ops/matmul/hopper.rs converts the same way.
    static uint16_t round16(float x, bool f16) {
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        if (!f16) return (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
        uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
        float a = std::fabs(x);
        if (a < 0x1p-14f) return sign | (uint16_t)std::nearbyint(a * 0x1p24f);  // subnormal halves
        uint32_t half = ((((bits >> 23) & 0xff) - 127 + 15) << 10) | ((bits & 0x7fffff) >> 13), rest = bits & 0x1fff;
        return sign | (uint16_t)(half + (rest > 0x1000 || (rest == 0x1000 && (half & 1))));
    }
    static float value16(uint16_t h, bool f16) {
        if (!f16) {
            uint32_t bits = (uint32_t)h << 16;
            float v;
            std::memcpy(&v, &bits, 4);
            return v;
        }
        int e = (h >> 10) & 0x1f;
        float mant = (float)(h & 0x3ff), sign = h & 0x8000 ? -1.0f : 1.0f;
        return e == 0 ? sign * mant * 0x1p-24f : sign * std::ldexp(1.0f + mant / 1024.0f, e - 15);
    }

    // The tensor map of a row-major rows x cols matrix of `type` (1, 2 or 4 bytes an element),
    // its rows `ld` elements apart (0: dense), boxes of box_rows x box_cols, the 128-byte
    // swizzle, zeros outside: as library/src/matmul/hopper.rs encodes it.
    static CUtensorMap tensor_map(CUtensorMapDataType type, CUdeviceptr address, size_t rows, size_t cols,
                                  unsigned box_rows, unsigned box_cols, size_t ld = 0) {
        CUtensorMap map{};
        size_t bytes = type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ? 4 : type == CU_TENSOR_MAP_DATA_TYPE_UINT8 ? 1 : 2;
        cuuint64_t dims[2] = {cols, rows}, strides[1] = {(ld ? ld : cols) * bytes};
        cuuint32_t box[2] = {box_cols, box_rows}, element_strides[2] = {1, 1};
        CK(cuTensorMapEncodeTiled(&map, type, 2, (void*)address, dims, strides, box, element_strides,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
        return map;
    }

    // The Hopper matrix products (kernels/src/matmul/wgmma*.rs, twins in matmul/wgmma.cu): TF32,
    // BF16 and FP16 inputs, f32 output, at the shapes the issue measures against cuBLAS: 256^3 and
    // 512^3 (fewer narrow tiles than SMs: the small step's case), 1024^3 (fewer wide tiles than
    // SMs: the narrow step's), 2048^3, 3072^3 (wide tiles in 2.2 waves, narrow ones in 4.4: the
    // medium step's case), the host's default 4096^3, 8192^3, and 8192x8192x256 (a short k: few
    // slices per tile); and for TF32 4096x4097x4096, whose rows of C are not 16-byte aligned (the epilogue's
    // staged stores, and no TMA-store step; the 16-bit types' B, k x n, would need its rows padded for TMA).
    // TF32 takes B transposed (n x k), here the first n * k values of a random matrix.
    void wgmma() {
        if (hopper_ptx.empty()) return;
        size_t large = pick(8192, 4096);
        auto af = random_f32(large * large, 31), bf = random_f32(large * large, 32);
        struct Dims {
            size_t m, n, k;
        };
        std::vector<Dims> shapes = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
                                    {4096, 4096, 4096}};
        if (!quick)
            shapes.push_back({3072, 3072, 3072}), shapes.push_back({8192, 8192, 8192}),
                shapes.push_back({8192, 8192, 256});
        shapes.push_back({4096, 4097, 4096});
        for (const char* type : {"tf32", "bf16", "f16"}) {
            bool tf32 = type[0] == 't', f16 = type[0] == 'f';
            // The inputs as the kernel reads them, and their values for the reference.
            std::vector<float> av(af.size()), bv(bf.size());
            Buffer a, b;
            if (tf32) {
                for (size_t i = 0; i < af.size(); ++i) av[i] = round_tf32(af[i]), bv[i] = round_tf32(bf[i]);
                a = upload(av), b = upload(bv);
            } else {
                std::vector<uint16_t> ah(af.size()), bh(bf.size());
                for (size_t i = 0; i < af.size(); ++i) {
                    ah[i] = round16(af[i], f16), bh[i] = round16(bf[i], f16);
                    av[i] = value16(ah[i], f16), bv[i] = value16(bh[i], f16);
                }
                a = upload(ah), b = upload(bh);
            }
            CUtensorMapDataType map_type = tf32  ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                           : f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
            unsigned bk = tf32 ? WGMMA_BK_TF32 : WGMMA_BK;
            for (Dims d : shapes) {
                size_t m = d.m, n = d.n, k = d.k;
                if (!tf32 && n % 8 != 0) continue;
                // The first m * k and k * n elements: still random matrices.
                std::vector<CUtensorMap> maps(2);
                if (!g_dry)
                    maps = {tensor_map(map_type, a->ptr, m, k, WGMMA_BM, bk),
                            tf32 ? tensor_map(map_type, b->ptr, n, k, WGMMA_BOX_N, bk)
                                 : tensor_map(map_type, b->ptr, k, n, bk, WGMMA_BOX_N)};
                auto map_buffer = upload(maps);
                auto c = device(4 * m * n);
                // C's map, for the TMA-store step (rows of C a multiple of 16 bytes only).
                std::vector<CUtensorMap> c_map(1);
                if (!g_dry && n % 4 == 0)
                    c_map = {tensor_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, c->ptr, m, n, WGMMA_STORE_BOX_ROWS,
                                        WGMMA_STORE_BOX_COLS)};
                auto c_map_buffer = upload(c_map);
                // One block per tile; one per SM over wide tiles, narrow, small or medium ones,
                // and wide ones stored through TMA.
                for (int step : {0, 1, 2, 3, 4, 5}) {
                    static const char* const names[] = {"matmul_wgmma_",        "matmul_wgmma_persistent_",
                                                        "matmul_wgmma_narrow_", "matmul_wgmma_small_",
                                                        "matmul_wgmma_medium_", "matmul_wgmma_tma_store_"};
                    static const unsigned widths[] = {WGMMA_BN,       WGMMA_BN,        WGMMA_NARROW_BN,
                                                      WGMMA_SMALL_BN, WGMMA_MEDIUM_BN, WGMMA_BN};
                    static const unsigned shareds[] = {WGMMA_SHARED_BYTES,        WGMMA_SHARED_BYTES,
                                                       WGMMA_NARROW_SHARED_BYTES, WGMMA_SMALL_SHARED_BYTES,
                                                       WGMMA_MEDIUM_SHARED_BYTES, WGMMA_TMA_STORE_SHARED_BYTES};
                    bool tma_store = step == 5;
                    if (tma_store && n % 4 != 0) continue;
                    unsigned bn = widths[step], shared = shareds[step];
                    unsigned tiles = blocks(m, WGMMA_BM) * blocks(n, bn);
                    Case x;
                    x.hopper = true;
                    x.kernel = std::string(names[step]) + type;
                    x.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
                    x.unit = "GFLOP/s", x.work = 2.0 * m * n * k;
                    x.shape = step > 0 ? Shape{std::min(sms, tiles), 1, WGMMA_THREADS, 1, shared}
                                       : Shape{blocks(n, bn), blocks(m, WGMMA_BM), WGMMA_THREADS, 1, shared};
                    x.args.ptr(map_buffer).ptr(tma_store ? c_map_buffer : c).add(m).add(n).add(k);
                    // The same products in the same order: equal up to nothing the runner should see.
                    x.out = c, x.compare = Compare::Close, x.tolerance = 1e-3;
                    x.reference = [=, &av, &bv](const std::vector<unsigned char>& out) -> std::string {
                        const float* o = reinterpret_cast<const float*>(out.data());
                        for (size_t e : sample_indices(m * n, 32, 33)) {
                            size_t i = e / n, j = e % n;
                            double sum = 0, magnitude = 0;
                            for (size_t p = 0; p < k; ++p) {
                                double t = (double)av[i * k + p] * (tf32 ? bv[j * k + p] : bv[p * n + j]);
                                sum += t, magnitude += std::fabs(t);
                            }
                            // f32 accumulation of exact products: k rounding errors of at most
                            // 2^-24 |partial sum|, with room for order and truncation.
                            if (!(std::fabs(o[e] - sum) <= 2.0 * k * FLT_EPSILON * magnitude + FLT_MIN))
                                return "C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " +
                                       fmt("%.9g", o[e]) + ", want " + fmt("%.9g", sum);
                        }
                        return "";
                    };
                    run(x);
                }
            }
        }
    }
#endif

#if CUDA_VERSION >= 12000
    // The step and splits library/src/matmul/split.rs's tensor_split_for picks for inputs of
    // `bytes` an element: none while C's wide tiles fill more than a quarter of the SMs, while
    // the partial products would outweigh A and B, or where fewer than WGMMA_SPLIT_MIN_SPLITS
    // would do; else, where C is no wider than a narrow tile, small tiles in enough splits to
    // come to half the SMs, each at least WGMMA_SMALL_SPLIT_MIN_SLICES slices, otherwise wide
    // ones filling the SMs about once, each at least WGMMA_SPLIT_MIN_SLICES; made even
    // (split_count).
    struct WgmmaSplit {
        bool small;
        size_t splits;
    };
    WgmmaSplit tensor_split_for(size_t m, size_t n, size_t k, size_t bk, size_t bytes) const {
        bool small = n <= WGMMA_NARROW_BN;
        size_t fewest = small ? WGMMA_SMALL_SPLIT_MIN_SLICES : WGMMA_SPLIT_MIN_SLICES;
        return {small, wgmma_splits(m, n, k, bytes, small ? WGMMA_SMALL_BN : WGMMA_BN, blocks(k, bk),
                                    small ? sms / 2 : sms, fewest)};
    }

    // split.rs's fp8_splits_for: the same rule on wide tiles, WGMMA_BK_FP8 of k a slice.
    size_t fp8_splits_for(size_t m, size_t n, size_t k) const {
        return wgmma_splits(m, n, k, 1, WGMMA_BN, blocks(k, WGMMA_BK_FP8), sms, WGMMA_SPLIT_MIN_SLICES);
    }

    // split.rs's wgmma_splits: none while C's wide tiles fill more than a quarter of the SMs,
    // the partials would outweigh A and B, or fewer than WGMMA_SPLIT_MIN_SPLITS would do; else
    // tiles x splits about `target`, each split at least `fewest` of the `slices`, made even.
    size_t wgmma_splits(size_t m, size_t n, size_t k, size_t bytes, size_t tile_n, size_t slices, size_t target,
                        size_t fewest) const {
        size_t wide = (size_t)blocks(m, WGMMA_BM) * blocks(n, WGMMA_BN);
        if (4 * wide > sms) return 1;
        size_t tiles = (size_t)blocks(m, WGMMA_BM) * blocks(n, tile_n);
        size_t splits = split_count(slices, std::min<size_t>(target / tiles, slices / fewest));
        return 4 * splits * m * n > bytes * k * (m + n) || splits < WGMMA_SPLIT_MIN_SPLITS ? 1 : splits;
    }

    // Split k on the wgmma steps (kernels/src/matmul/wgmma.rs and wgmma_small.rs, twins in
    // matmul/wgmma.cu): the pipelined products, or the small tiles' persistent grid, `splits`
    // deep, each layer's partial product checked through their sum, at the issue's long-k shapes
    // on the step and in as many splits as the host picks. Their reduction is step 4d's,
    // matmul_split_reduce in the main modules (matmul_split()).
    void wgmma_split() {
        if (hopper_ptx.empty()) return;
        struct Dims {
            size_t m, n, k;
        };
        const std::vector<Dims> shapes = {{64, 64, 65536}, {128, 128, 16384}, {16, 4096, 4096}, {64, 64, 8192}};
        size_t most = 0;
        for (Dims d : shapes) most = std::max(most, std::max(d.m * d.k, d.k * d.n));
        auto af = random_f32(most, 41), bf = random_f32(most, 42);
        for (const char* type : {"tf32", "bf16", "f16"}) {
            bool tf32 = type[0] == 't', f16 = type[0] == 'f';
            std::vector<float> av(af.size()), bv(bf.size());
            Buffer a, b;
            if (tf32) {
                for (size_t i = 0; i < af.size(); ++i) av[i] = round_tf32(af[i]), bv[i] = round_tf32(bf[i]);
                a = upload(av), b = upload(bv);
            } else {
                std::vector<uint16_t> ah(af.size()), bh(bf.size());
                for (size_t i = 0; i < af.size(); ++i) {
                    ah[i] = round16(af[i], f16), bh[i] = round16(bf[i], f16);
                    av[i] = value16(ah[i], f16), bv[i] = value16(bh[i], f16);
                }
                a = upload(ah), b = upload(bh);
            }
            CUtensorMapDataType map_type = tf32  ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                           : f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
            unsigned bk = tf32 ? WGMMA_BK_TF32 : WGMMA_BK;
            for (Dims d : shapes) {
                size_t m = d.m, n = d.n, k = d.k;
                // Named copies, not structured bindings: the check's lambda captures them.
                WgmmaSplit pick = tensor_split_for(m, n, k, bk, tf32 ? 4 : 2);
                bool small = pick.small;
                size_t splits = pick.splits;
                std::vector<CUtensorMap> maps(2);
                if (!g_dry)
                    maps = {tensor_map(map_type, a->ptr, m, k, WGMMA_BM, bk),
                            tf32 ? tensor_map(map_type, b->ptr, n, k, WGMMA_BOX_N, bk)
                                 : tensor_map(map_type, b->ptr, k, n, bk, WGMMA_BOX_N)};
                auto map_buffer = upload(maps);
                auto partials = device(4 * splits * m * n);
                Case x;
                x.hopper = true;
                x.kernel = std::string(small ? "matmul_wgmma_small_" : "matmul_wgmma_") + type;
                x.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + "/" +
                         std::to_string(splits);
                x.unit = "GFLOP/s", x.work = 2.0 * m * n * k;
                // The small tiles' layers: one block per tile, up to the SMs over all layers
                // (split::layer_blocks).
                unsigned small_tiles = blocks(m, WGMMA_BM) * blocks(n, WGMMA_SMALL_BN);
                unsigned layer = std::max<unsigned>(1, sms / (unsigned)splits);
                x.shape = small ? Shape{std::min(small_tiles, layer), 1, WGMMA_THREADS, 1, WGMMA_SMALL_SHARED_BYTES}
                                : Shape{blocks(n, WGMMA_BN), blocks(m, WGMMA_BM), WGMMA_THREADS, 1, WGMMA_SHARED_BYTES};
                x.shape.gz = (unsigned)splits;
                x.args.ptr(map_buffer).ptr(partials).add(m).add(n).add(k);
                x.out = partials, x.compare = Compare::Close, x.tolerance = 1e-3;
                x.reference = [=, &av, &bv](const std::vector<unsigned char>& out) -> std::string {
                    auto a_at = [&](size_t i, size_t p) { return (double)av[i * k + p]; };
                    auto b_at = [&](size_t p, size_t j) { return (double)(tf32 ? bv[j * k + p] : bv[p * n + j]); };
                    return check_split_sums(out, {m, n, k, splits}, 43, a_at, b_at);
                };
                run(x);
            }
        }
    }
#endif

#if CUDA_VERSION >= 12000
    // x as e4m3 bits, as cvt.rn.satfinite.e4m3x2.f32 rounds and library/src/matmul/fp8.rs's
    // e4m3_bits computes it, on the value: to the nearest multiple of the quantum of x's binade
    // (2^(e-3), 2^-9 below 2^-6), ties to even, past 448 saturated, NaN kept with its sign.
    static uint8_t e4m3_bits(float x) {
        uint8_t sign = std::signbit(x) ? 0x80 : 0;
        if (std::isnan(x)) return sign | 0x7f;
        float magnitude = std::fabs(x);
        if (magnitude >= (float)WGMMA_E4M3_MAX) return sign | 0x7e;
        uint32_t bits;
        std::memcpy(&bits, &magnitude, 4);
        int exponent = std::max((int)((bits >> 23) & 0xff) - 127, -6);
        double quantum = std::ldexp(1.0, exponent - 3);
        // Exact in f64; nearbyint rounds ties to even in the default rounding mode.
        double rounded = std::nearbyint(magnitude / quantum) * quantum;
        if (rounded < 0x1p-6) return sign | (uint8_t)(rounded / 0x1p-9);
        int binade = std::ilogb(rounded);
        uint8_t mantissa = (uint8_t)(rounded / std::ldexp(1.0, binade - 3)) - 8;
        return sign | (uint8_t)((binade + 7) << 3) | mantissa;
    }
    static float e4m3_value(uint8_t q) {
        float sign = q & 0x80 ? -1.0f : 1.0f;
        int exponent = (q >> 3) & 0xf, mantissa = q & 7;
        if (exponent == 15 && mantissa == 7) return NAN;
        return exponent == 0 ? sign * mantissa * 0x1p-9f : sign * std::ldexp(8.0f + mantissa, exponent - 10);
    }

    // The per-tensor scale of values whose largest finite magnitude is amax (fp8.rs's
    // scale_for): amax / 448, 1 for zeros, at least the smallest normal float.
    static float e4m3_scale(const std::vector<float>& values) {
        float amax = 0;
        for (float v : values)
            if (std::fabs(v) > amax) amax = std::fabs(v);
        return amax == 0 ? 1.0f : std::max(amax / (float)WGMMA_E4M3_MAX, FLT_MIN);
    }

    // out[i] = f(i) for every i < out.size(), on the host's cores.
    template <class T, class F>
    static void fill_parallel(std::vector<T>& out, F f) {
        size_t n = out.size();
        unsigned workers = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
        std::vector<std::thread> pool;
        for (unsigned w = 0; w < workers; ++w)
            pool.emplace_back([&, w] {
                for (size_t i = n * w / workers; i < n * (w + 1) / workers; ++i) out[i] = f(i);
            });
        for (auto& t : pool) t.join();
    }

    static size_t fp8_padded(size_t cols) {
        return (cols + WGMMA_FP8_ROW_ALIGN - 1) / WGMMA_FP8_ROW_ALIGN * WGMMA_FP8_ROW_ALIGN;
    }

    // The grid-stride launch of the FP8 conversions, as fp8.rs's grid_stride: blocks of
    // WGMMA_FP8_CONVERT_THREADS over `items`, at most 8 for each of an H100's 132 SMs (a fixed
    // count there, not the GPU's).
    static Shape fp8_grid_stride(size_t items) {
        return {std::min(blocks(items, WGMMA_FP8_CONVERT_THREADS), 8u * 132u), 1, WGMMA_FP8_CONVERT_THREADS, 1, 0};
    }

    // Step H4, FP8 (kernels/src/matmul/wgmma_fp8.rs, twin in matmul/wgmma_fp8.cu): A (m x k)
    // and B given as Bᵀ (n x k), each the first values of a random matrix, scaled by one scale
    // per matrix and rounded to e4m3 here (as fp8.rs's quantize), rows padded with zeros to 16
    // bytes as E4m3Matrix holds them; at the host's default 4096^3, 8192^3, and a shape odd in
    // every dimension (partial tiles, the second consumer idle in the last row of tiles, C's
    // rows not 16-byte aligned, k's last stage partial).
    void wgmma_fp8() {
        if (hopper_ptx.empty()) return;
        struct Dims {
            size_t m, n, k;
        };
        std::vector<Dims> shapes = {{4096, 4096, 4096}};
        if (!quick) shapes.push_back({8192, 8192, 8192});
        // An odd shape; long k split as the host splits it (a grid `splits` deep).
        shapes.push_back({949, 1001, 999});
        shapes.push_back({64, 64, 65536});
        shapes.push_back({17, 31, 5000});
        size_t large = pick(8192, 4096);
        auto af = random_f32(large * large, 51), bf = random_f32(large * large, 52);
        const float scale_a = e4m3_scale(af), scale_b = e4m3_scale(bf);
        const float inverse_a = 1.0f / scale_a, inverse_b = 1.0f / scale_b;
        // The e4m3 bits, and their values for the reference (the scales apply to its f64 sums).
        std::vector<uint8_t> qa(af.size()), qb(bf.size());
        fill_parallel(qa, [&](size_t i) { return e4m3_bits(af[i] * inverse_a); });
        fill_parallel(qb, [&](size_t i) { return e4m3_bits(bf[i] * inverse_b); });
        std::vector<float> av(qa.size()), bv(qb.size());
        fill_parallel(av, [&](size_t i) { return e4m3_value(qa[i]); });
        fill_parallel(bv, [&](size_t i) { return e4m3_value(qb[i]); });
        for (Dims d : shapes) {
            size_t m = d.m, n = d.n, k = d.k, ld = fp8_padded(k);
            // rows x k of q in rows of ld bytes, zeros past k.
            auto padded = [&](const std::vector<uint8_t>& q, size_t rows) {
                std::vector<uint8_t> out(g_dry ? 0 : rows * ld);
                fill_parallel(out, [&](size_t i) { return i % ld < k ? q[i / ld * k + i % ld] : (uint8_t)0; });
                return upload(out);
            };
            auto a = padded(qa, m), b = padded(qb, n);
            std::vector<CUtensorMap> maps(2);
            if (!g_dry)
                maps = {tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, a->ptr, m, k, WGMMA_BM, WGMMA_BK_FP8, ld),
                        tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, b->ptr, n, k, WGMMA_BOX_N, WGMMA_BK_FP8, ld)};
            auto map_buffer = upload(maps);
            size_t splits = fp8_splits_for(m, n, k);
            auto c = device(4 * splits * m * n);
            Case x;
            x.hopper = true;
            x.kernel = "matmul_wgmma_e4m3";
            x.size = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                     (splits > 1 ? "/" + std::to_string(splits) : "");
            x.unit = "GFLOP/s", x.work = 2.0 * m * n * k;
            // The persistent grid: one block per SM over all layers (split::layer_blocks), fewer
            // where there are fewer tiles.
            unsigned tiles = blocks(m, WGMMA_BM) * blocks(n, WGMMA_BN);
            unsigned layer = std::max<unsigned>(1, sms / (unsigned)splits);
            x.shape = Shape{std::min(layer, tiles), 1, WGMMA_THREADS, 1, WGMMA_SHARED_BYTES};
            x.shape.gz = (unsigned)splits;
            x.args.ptr(map_buffer).ptr(c).add(m).add(n).add(k).add(scale_a).add(scale_b);
            // The same products in the same order: equal up to nothing the runner should see.
            x.out = c, x.compare = Compare::Close, x.tolerance = 1e-3;
            x.reference = [=, &av, &bv](const std::vector<unsigned char>& out) -> std::string {
                const float* o = reinterpret_cast<const float*>(out.data());
                double scale = (double)scale_a * scale_b;
                for (size_t e : sample_indices(m * n, 32, 53)) {
                    size_t i = e / n, j = e % n;
                    double sum = 0, magnitude = 0;
                    for (size_t p = 0; p < k; ++p) {
                        double t = (double)av[i * k + p] * bv[j * k + p];
                        sum += t, magnitude += std::fabs(t);
                    }
                    sum *= scale, magnitude *= scale;
                    // The layers' partial products, each scaled, add up to C.
                    double got = 0;
                    for (size_t s = 0; s < splits; ++s) got += o[s * m * n + e];
                    // fp8.rs's tolerance: 2^-13 of the magnitude per instruction (32 of k), the
                    // tensor cores' FP8 accumulation, on top of the f32 bound of the other steps.
                    double tolerance = (double)((k + 31) / 32) * 0x1p-13 * magnitude +
                                       2.0 * k * FLT_EPSILON * magnitude + FLT_MIN;
                    if (!(std::fabs(got - sum) <= tolerance))
                        return "C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + fmt("%.9g", got) +
                               ", want " + fmt("%.9g", sum);
                }
                return "";
            };
            run(x);
        }
    }

    // FP8's conversions (kernels/src/matmul/convert_fp8.rs, twins in matmul/wgmma_fp8.cu) on a
    // random f32 matrix, at 4096x4096 and at a size whose rows are neither whole words nor whole
    // tiles: the largest magnitude, then the rounding as the matrix lies and transposed, each
    // byte (the zero padding too) checked against the rounding here.
    void convert_fp8() {
        if (hopper_ptx.empty()) return;
        struct Dims {
            size_t rows, cols;
        };
        for (Dims d : {Dims{4096, 4096}, Dims{999, 1001}}) {
            size_t rows = d.rows, cols = d.cols, len = rows * cols;
            std::string size = std::to_string(rows) + "x" + std::to_string(cols);
            auto values = random_f32(len, 61);
            auto src = upload(values);
            // The largest magnitude's bits, which the scale and its inverse come from.
            const float scale = e4m3_scale(values), inverse = 1.0f / scale;
            uint32_t amax_bits = 0;
            for (float v : values) {
                float a = std::fabs(v);
                uint32_t bits;
                std::memcpy(&bits, &a, 4);
                amax_bits = std::max(amax_bits, bits);
            }
            auto amax = device(4);
            Case x;
            x.hopper = true;
            x.kernel = "convert_fp8_amax", x.size = size, x.unit = "GB/s", x.work = 4.0 * len;
            x.shape = fp8_grid_stride(len);
            x.args.slice(src, len).ptr(amax).add(len);
            // The kernel raises what amax holds: every launch starts from 0.
            x.reset = [amax](CUstream s) { CK(cuMemsetD32Async(amax->ptr, 0, 1, s)); };
            x.out = amax, x.compare = Compare::Exact;
            x.reference = [amax_bits](const std::vector<unsigned char>& out) -> std::string {
                uint32_t got;
                std::memcpy(&got, out.data(), 4);
                if (got == amax_bits) return "";
                return "amax bits " + std::to_string(got) + ", want " + std::to_string(amax_bits);
            };
            run(x);

            for (bool transposed : {false, true}) {
                // The output: rows of cols (transposed: cols rows of rows), padded to 16 bytes.
                size_t out_rows = transposed ? cols : rows, out_cols = transposed ? rows : cols;
                size_t ld = fp8_padded(out_cols), bytes = out_rows * ld;
                std::vector<uint8_t> want(g_dry ? 0 : bytes);
                fill_parallel(want, [&](size_t i) {
                    size_t r = i / ld, col = i % ld;
                    if (col >= out_cols) return (uint8_t)0;
                    return e4m3_bits(values[transposed ? col * cols + r : r * cols + col] * inverse);
                });
                auto dst = device(bytes);
                Case y;
                y.hopper = true;
                y.kernel = transposed ? "convert_e4m3_transposed" : "convert_e4m3";
                y.size = size, y.unit = "GB/s", y.work = 4.0 * len + bytes;
                y.shape = transposed ? Shape{blocks(cols, WGMMA_FP8_TILE), blocks(rows, WGMMA_FP8_TILE),
                                             WGMMA_FP8_CONVERT_THREADS, 1, 0}
                                     : fp8_grid_stride(bytes / 4);
                y.args.slice(src, len).ptr(dst).add(rows).add(cols).add(inverse);
                y.out = dst, y.compare = Compare::Exact;
                y.reference = [want = std::move(want), ld](const std::vector<unsigned char>& out) -> std::string {
                    for (size_t i = 0; i < want.size(); ++i)
                        if (out[i] != want[i])
                            return "byte " + std::to_string(i) + " (row " + std::to_string(i / ld) + ", column " +
                                   std::to_string(i % ld) + ") = " + std::to_string(out[i]) + ", want " +
                                   std::to_string(want[i]);
                    return "";
                };
                run(y);
            }
        }
    }
#endif

    // Entries of the project PTX that no case launches: a new kernel that needs a twin.
    std::vector<std::string> untwinned() const {
        std::vector<std::string> names;
        const std::string key = ".entry ";
        for (size_t at = rust_ptx.find(key); at != std::string::npos; at = rust_ptx.find(key, at + 1)) {
            size_t begin = at + key.size();
            std::string name = rust_ptx.substr(begin, rust_ptx.find('(', begin) - begin);
            bool covered = false;
            for (const Row& r : rows) covered |= r.kernel == name;
            if (!covered) names.push_back(name);
        }
        return names;
    }

    void hopper_cases() {
#if CUDA_VERSION >= 12000
        wgmma();
        wgmma_split();
        wgmma_fp8();
        convert_fp8();
#else
        if (!hopper_ptx.empty()) std::fprintf(stderr, "runner: built with CUDA < 12 (no tensor maps): --hopper ignored\n");
#endif
    }

    void warn_untwinned() const {
        if (!only.empty()) return;
        for (const std::string& name : untwinned())
            std::fprintf(stderr, "runner: warning: %s is in the project PTX but has no twin here\n", name.c_str());
    }

    void write_json(const std::string& path, const std::string& device_name, const std::string& error) const {
        std::ofstream f(path);
        f << "{\"device\": " << json_string(device_name) << ", \"date\": " << json_string(utc_now())
          << ", \"quick\": " << (quick ? "true" : "false") << ", \"runs\": " << runs;
        if (!error.empty()) f << ", \"error\": " << json_string(error);
        if (only.empty()) {
            f << ", \"untwinned\": [";
            auto names = untwinned();
            for (size_t i = 0; i < names.size(); ++i) f << (i ? ", " : "") << json_string(names[i]);
            f << "]";
        }
        f << ", \"rows\": [";
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row& r = rows[i];
            f << (i ? ",\n  " : "\n  ") << "{\"kernel\": " << json_string(r.kernel) << ", \"size\": " << json_string(r.size)
              << ", \"rust_ms\": " << json_number(r.rust_ms) << ", \"rust_min_ms\": " << json_number(r.rust_min)
              << ", \"c_ms\": " << json_number(r.c_ms) << ", \"c_min_ms\": " << json_number(r.c_min)
              << ", \"ratio\": " << json_number(r.rust_ms / r.c_ms) << ", \"unit\": " << json_string(r.unit)
              << ", \"rust_rate\": " << json_number(rate(r, r.rust_ms))
              << ", \"c_rate\": " << json_number(rate(r, r.c_ms)) << ", \"rust_regs\": " << r.rust_regs
              << ", \"c_regs\": " << r.c_regs << ", \"check\": " << json_string(r.check)
              << ", \"detail\": " << json_string(r.detail) << "}";
        }
        f << "\n]}\n";
        if (!f) std::fprintf(stderr, "runner: could not write %s\n", path.c_str());
    }
};

CUmodule load_module(const std::string& image, const char* what) {
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, (void*)(uintptr_t)sizeof log};
    CUmodule m = nullptr;
    CUresult r = cuModuleLoadDataEx(&m, image.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) throw CudaError(std::string("loading ") + what + ": " + error_text(r) + (log[0] ? "\n" : "") + log);
    return m;
}

int usage() {
    std::fprintf(stderr,
                 "usage: runner <project.ptx> <twins.cubin|twins.ptx> [--quick] [--json out.json] [--runs N] "
                 "[--only name,name] [--hopper kernels_sm90a.ptx twins_sm90a.cubin]\n"
                 "       runner <project.ptx> <twins.ptx> --signatures [--launches launches.txt] [--sms N]\n"
                 "  --signatures: no GPU needed; check that every kernel is in both modules with the\n"
                 "  parameters the runner passes (give the twins as PTX to check them too) and, with\n"
                 "  --launches (from `host launches --sms N`), that every case at its full size has the\n"
                 "  host's grid, block and shared memory on a GPU of N SMs (default 132, an H100 SXM)\n");
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    Runner run;
    std::vector<std::string> files;
    std::string json, launches, hopper_files[2];
    unsigned dry_sms = 132;  // an H100 SXM
    bool dry_option = false;  // --launches or --sms, which only --signatures takes
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quick") run.quick = true;
        else if (a == "--signatures") g_dry = true;
        else if (a == "--launches" && i + 1 < argc) launches = argv[++i], dry_option = true;
        else if (a == "--sms" && i + 1 < argc) dry_sms = (unsigned)std::max(1, std::atoi(argv[++i])), dry_option = true;
        else if (a == "--json" && i + 1 < argc) json = argv[++i];
        else if (a == "--hopper" && i + 2 < argc) hopper_files[0] = argv[++i], hopper_files[1] = argv[++i];
        else if (a == "--runs" && i + 1 < argc) run.runs = std::max(1, std::atoi(argv[++i]));
        else if (a == "--only" && i + 1 < argc) {
            std::stringstream list(argv[++i]);
            for (std::string s; std::getline(list, s, ',');)
                if (!s.empty()) run.only.push_back(s);
        } else if (a.rfind("--", 0) == 0) return usage();
        else files.push_back(a);
    }
    if (files.size() != 2 || (dry_option && !g_dry)) return usage();
    bool runs_given = false;
    for (int i = 1; i < argc; ++i) runs_given |= std::string(argv[i]) == "--runs";
    if (run.quick && !runs_given) run.runs = 5;

    std::string twin_image, hopper_twin_image;
    try {
        run.rust_ptx = read_file(files[0]);
        twin_image = read_file(files[1]);
        if (!hopper_files[0].empty()) {
            run.hopper_ptx = read_file(hopper_files[0]);
            hopper_twin_image = read_file(hopper_files[1]);
            if (hopper_twin_image.compare(0, 4, "\x7f" "ELF") != 0) run.hopper_twin_text = hopper_twin_image;
        }
        if (!launches.empty()) run.host_launches = read_launches(launches);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runner: %s\n", e.what());
        return 1;
    }
    if (run.rust_ptx.find(".entry") == std::string::npos) {
        std::fprintf(stderr, "runner: %s is not PTX text\n", files[0].c_str());
        return 1;
    }
    if (twin_image.compare(0, 4, "\x7f" "ELF") != 0) run.twin_text = twin_image;

    if (g_dry) {
        run.sms = dry_sms;  // for the grid-stride kernels' grids
        Runner::header();
        run.vector_add(), run.saxpy(), run.counter(), run.histogram(), run.transpose(), run.matmul(), run.matmul_split(),
            run.matmul_split_async(),
            run.mma(), run.conv2d(), run.conv1d(), run.reduce(), run.select(), run.scan(), run.compact(), run.label(),
            run.fit(), run.background(), run.hopper_cases();
        size_t failed = 0;
        for (const Row& r : run.rows) failed += !r.passed;
        run.warn_untwinned();
        std::printf("\n%zu kernels, %zu with a missing entry, other parameters or another launch shape%s%s\n",
                    run.rows.size(), failed,
                    run.twin_text.empty() ? " (the twins' cubin is not checked: pass twins.ptx)" : "",
                    run.host_launches.empty() ? " (launch shapes not compared: pass --launches)" : "");
        return failed ? 1 : 0;
    }

    // No GPU is not a crash: say why and exit 2.
    CUresult init = cuInit(0);
    int count = 0;
    if (init == CUDA_SUCCESS) init = cuDeviceGetCount(&count);
    if (init != CUDA_SUCCESS || count == 0) {
        std::fprintf(stderr, "runner: no usable GPU (%s); nothing measured\n",
                     init != CUDA_SUCCESS ? ("cuInit: " + error_text(init)).c_str() : "no CUDA device");
        return 2;
    }

    std::string device_name = "?", error;
    try {
        CUdevice dev;
        CK(cuDeviceGet(&dev, 0));
        char name[256] = {0};
        CK(cuDeviceGetName(name, sizeof name, dev));
        device_name = name;
        int sms = 0, major = 0, minor = 0, driver = 0;
        CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
        CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
        CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
        CK(cuDriverGetVersion(&driver));
        run.sms = (unsigned)sms;
        // The primary context: cuCtxCreate's signature differs between CUDA 11 and 13.
        CUcontext ctx;
        CK(cuDevicePrimaryCtxRetain(&ctx, dev));
        CK(cuCtxSetCurrent(ctx));
        CK(cuStreamCreate(&run.stream, CU_STREAM_NON_BLOCKING));
        CK(cuEventCreate(&run.start, CU_EVENT_DEFAULT));
        CK(cuEventCreate(&run.stop, CU_EVENT_DEFAULT));
        run.rust = load_module(run.rust_ptx, files[0].c_str());
        run.twin = load_module(twin_image, files[1].c_str());
        if (!run.hopper_ptx.empty() && (major != 9 || minor != 0)) {
            std::printf("the Hopper modules need sm_90 (Hopper); this GPU is sm_%d%d: skipped\n", major, minor);
            run.hopper_ptx.clear();
        } else if (!run.hopper_ptx.empty()) {
            run.hopper_rust = load_module(run.hopper_ptx, hopper_files[0].c_str());
            run.hopper_twin = load_module(hopper_twin_image, hopper_files[1].c_str());
        }
        run.scratch = device(256u << 20);
        std::printf("%s, sm_%d%d, %d SMs, driver %d.%d; at least %d timed launches each (median, interleaved; "
                    "short kernels more), L2 flushed before each\nRust: %s\nC:    %s\n\n",
                    name, major, minor, sms, driver / 1000, driver % 1000 / 10, run.runs, files[0].c_str(),
                    files[1].c_str());
        Runner::header();
        run.vector_add();
        run.saxpy();
        run.counter();
        run.histogram();
        run.transpose();
        run.matmul();
        run.matmul_split();
        run.matmul_split_async();
        run.mma();
        run.conv2d();
        run.conv1d();
        run.reduce();
        run.select();
        run.scan();
        run.compact();
        run.label();
        run.fit();
        run.background();
        run.hopper_cases();
    } catch (const std::exception& e) {
        error = e.what();
        std::fprintf(stderr, "runner: %s: %s\n", run.current.c_str(), e.what());
    }

    size_t failed = 0, met = 0;
    for (const Row& r : run.rows) {
        failed += !r.passed;
        met += r.passed && r.rust_ms / r.c_ms <= 1.03;
    }
    run.warn_untwinned();
    std::printf("\n%zu kernels: %zu failed their checks; %zu within 3%% of CUDA C (ratio <= 1.03)\n", run.rows.size(),
                failed, met);
    if (!json.empty()) run.write_json(json, device_name, error);
    return !error.empty() || failed ? 1 : 0;
}
