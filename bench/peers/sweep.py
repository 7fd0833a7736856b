#!/usr/bin/env python3
"""The matrix-product sweep (issue 32): our product beside cuBLAS at the shapes users call,
for FP32 (TF32 off), TF32, BF16, FP16 and FP8, in one session on one GPU.

    python3 bench/peers/sweep.py --host target/release/host [--json sweep.json]
    bash bench/peers/run sweep --host target/release/host [--json sweep.json]

Ours is `host matmul --dtype T --m M --n N --k K --chosen --json`: the kernel the library's
`gemm` picks for the shape, type and GPU (FP8's one product, which takes no `--chosen`), so
each row is what a caller of `gemm` gets. The tuning cache is pointed at an empty directory,
so no `--tune` result takes part. cuBLAS is called through PyTorch on the same types: f32 in and out
(TF32 off, then on), BF16 and FP16 in with f32 out (`out_dtype`), FP8 e4m3 through cuBLASLt
(`torch._scaled_mm`, f32 out). Both sides are timed with CUDA events around single launches
after a warm-up, L2 flushed before each (outside the events), with the same number of launches
at each shape; each side's result is checked first (ours by `host matmul` against the CPU,
cuBLAS's on sampled rows against f64).

The table gives each shape's times and cuBLAS's time over ours (above 1: ours is faster); per
type, the geometric mean of that ratio and how many shapes fall below 0.90. Then the
accumulation error at long k (64x64x65536 and 64x8192x64): the largest error of each side
against an f64 product of the inputs as rounded to the type, on the same inputs (written as
.npy files for `host matmul --a --b`), and ours over cuBLAS's (the bar is 2).

The accumulation rows run first, then the shapes from the smallest product to the largest, so
that `--budget-s` (default 540: the sweep takes about half of it on an H100) leaves out the
largest rows, saying so, rather than the table. Exit 0 when every row ran and passed its
check, 1 when a product failed, a command broke or the budget cut rows, 2 without PyTorch or a
GPU.
"""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SQUARES = [256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 16384]
SHAPES = [(s, s, s) for s in SQUARES] + [
    (1000, 1000, 1000),
    (4095, 4097, 4099),
    (8192, 8192, 256),
    (8192, 8192, 1024),
    (64, 64, 65536),
    (128, 128, 16384),
    (16, 4096, 4096),
    (128, 14336, 4096),
    (4096, 14336, 4096),
]
LONG_K = [(64, 64, 65536), (64, 8192, 64)]
# The sweep's types: our --dtype (None: no such type in `host matmul` yet, found at run time),
# and how the table names it.
TYPES = [("f32", "FP32"), ("tf32", "TF32"), ("bf16", "BF16"), ("f16", "FP16"), ("fp8", "FP8")]
# Names `host matmul --dtype` may give an e4m3 type.
FP8_NAMES = ["fp8", "e4m3", "fp8-e4m3"]
WARMUP = 3
FLUSH_BYTES = 256 << 20
F32_EPS = 2.0**-23
BAR = 0.90


def note(message):
    print(f"sweep: {message}", file=sys.stderr, flush=True)


def launches(m, n, k):
    """Timed launches at a shape, the same on both sides: fewer for the large products (16384³
    in FP32 takes about 170 ms a launch)."""
    flops = 2 * m * n * k
    if flops >= 2**41:
        return 3
    if flops >= 2**38:
        return 10
    if flops >= 2**34:
        return 20
    return 50


def host_dtypes(host):
    """The values `host matmul --dtype` takes, from its help."""
    text = subprocess.run([host, "matmul", "--help"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"--dtype <DTYPE>.*?\[possible values: ([^\]]+)\]", text, re.S)
    return [v.strip() for v in found.group(1).split(",")] if found else ["f32"]


def run_host(host, env, args, timeout=300):
    """`host matmul ARGS --json`: its reports, or an error string."""
    command = [host, "matmul", *map(str, args), "--json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s: {' '.join(command)}"
    if done.returncode != 0:
        return None, f"exit {done.returncode}: {' '.join(command)}: {done.stderr.strip()[-400:]}"
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return reports, None


def ours(host, env, dtype, shape):
    """The library's pick at `shape` (FP8's one product): (ms, variant, error), from one
    `host matmul` run."""
    m, n, k = shape
    args = ["--dtype", dtype, "--m", m, "--n", n, "--k", k, "--iters", launches(*shape)]
    if dtype not in FP8_NAMES:
        args.append("--chosen")
    reports, error = run_host(host, env, args)
    if error:
        return {"error": error}
    passed = [r for r in reports if r["check"]["passed"]]
    failed = [r["variant"] for r in reports if not r["check"]["passed"]]
    if failed or len(passed) != 1:
        return {"error": f"the pick did not pass its check ({', '.join(failed) or 'none ran'})"}
    return {"ms": passed[0]["timing"]["median_ms"], "variant": passed[0]["variant"]}


class Cublas:
    """cuBLAS (cuBLASLt for FP8) through PyTorch, timed as the host times."""

    def __init__(self, torch):
        self.torch = torch
        self.dev = torch.device("cuda")
        self.scratch = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=self.dev)
        self.gen = torch.Generator(device=self.dev).manual_seed(32)

    def uniform(self, *shape):
        return self.torch.rand(*shape, device=self.dev, generator=self.gen) * 2 - 1

    def time(self, launch, runs):
        torch = self.torch
        for _ in range(WARMUP):
            launch()
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            self.scratch.zero_()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return statistics.median(times)

    def product(self, dtype, a, b):
        """C = A × B in `dtype` with f32 out, A and B f32 tensors (as drawn); returns the
        launch and the inputs as the product reads them (for the reference)."""
        torch = self.torch
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        if dtype in ("f32", "tf32"):
            out = torch.empty(a.shape[0], b.shape[1], device=self.dev)
            return (lambda: torch.mm(a, b, out=out)), (a, b)
        if dtype in ("bf16", "f16"):
            t = torch.bfloat16 if dtype == "bf16" else torch.float16
            a, b = a.to(t), b.to(t)
            return (lambda: torch.mm(a, b, out_dtype=torch.float32)), (a, b)
        # FP8 e4m3, per-tensor scales of 1; cuBLASLt wants B column-major.
        t = torch.float8_e4m3fn
        a8, b8 = a.to(t), b.t().contiguous().to(t).t()
        one = torch.ones((), device=self.dev)
        launch = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.float32)  # noqa: E731
        return launch, (a8, b8)

    def check(self, dtype, launch, inputs, k):
        """The largest error on 8 rows against f64, over the tolerance libraries.cu uses; TF32
        adds the inputs' rounding inside cuBLAS, FP8 as much for its accumulation, which keeps
        fewer bits than f32 on Hopper (a wrong call is off by far more)."""
        torch = self.torch
        c = launch()
        a, b = (x.float() for x in inputs)
        rows = torch.linspace(0, a.shape[0] - 1, min(8, a.shape[0]), device=self.dev).long()
        want = a[rows].double() @ b.double()
        tolerance = 8 * k * F32_EPS + (k * 2.0**-12 if dtype in ("tf32", "fp8") else 0.0)
        return float((c[rows].double() - want).abs().max()) / tolerance

    def measure(self, dtype, shape):
        m, n, k = shape
        a, b = self.uniform(m, k), self.uniform(k, n)
        try:
            launch, inputs = self.product(dtype, a, b)
            worst = self.check(dtype, launch, inputs, k)
            if not worst <= 1.0:
                return {"error": f"cuBLAS's result is off by {worst:.2f} tolerances"}
            ms = self.time(launch, launches(*shape))
        except (RuntimeError, TypeError) as e:
            return {"error": f"n/a: {str(e).splitlines()[0][:120]}"}
        finally:
            del a, b
            self.torch.cuda.empty_cache()
        return {"ms": ms}


def round_tf32(x):
    """f32 values rounded to TF32 as our conversion rounds (nearest, ties away from zero)."""
    import numpy as np

    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def accuracy(host, env, torch, cublas, dtype, shape, scratch):
    """Our and cuBLAS's largest error on the same inputs against f64 on the rounded inputs."""
    import numpy as np

    m, n, k = shape
    rng = np.random.default_rng(64)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    paths = [os.path.join(scratch, f"{name}.npy") for name in ("a", "b", "c")]
    np.save(paths[0], a)
    np.save(paths[1], b)
    reports, error = run_host(host, env, ["--dtype", dtype, "--a", paths[0], "--b", paths[1], "--output", paths[2],
                                          "--chosen", "--iters", 1])
    if error:
        return {"error": error}
    ours_c = np.load(paths[2]).astype(np.float64)
    if dtype == "tf32":
        ra, rb = round_tf32(a).astype(np.float64), round_tf32(b).astype(np.float64)
    elif dtype in ("bf16", "f16"):
        t = torch.bfloat16 if dtype == "bf16" else torch.float16
        ra, rb = (torch.from_numpy(x).to(t).double().numpy() for x in (a, b))
    else:
        ra, rb = a.astype(np.float64), b.astype(np.float64)
    want = ra @ rb
    launch, _ = cublas.product(dtype, torch.from_numpy(a).to(cublas.dev), torch.from_numpy(b).to(cublas.dev))
    theirs_c = launch().double().cpu().numpy()
    ours_err, theirs_err = float(np.abs(ours_c - want).max()), float(np.abs(theirs_c - want).max())
    return {"ours": ours_err, "cublas": theirs_err, "variant": reports[0]["variant"] if reports else "-"}


def fmt_ms(value):
    return "-" if value is None else f"{value:.4f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", required=True, help="the host binary (cargo build --release -p host)")
    parser.add_argument("--types", default=",".join(t for t, _ in TYPES), help="of f32,tf32,bf16,f16,fp8")
    parser.add_argument("--shapes", help="only these, as MxNxK,MxNxK")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--budget-s", type=float, default=540, help="start no row after this many seconds")
    options = parser.parse_args()
    started = time.time()
    try:
        import torch
    except ImportError as e:
        note(f"needs PyTorch: {e}")
        return 2
    if not torch.cuda.is_available():
        note("PyTorch sees no GPU")
        return 2
    wanted = options.types.split(",")
    shapes = SHAPES
    if options.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in options.shapes.split(",")]
    cublas = Cublas(torch)
    device = torch.cuda.get_device_name()
    ours_types = host_dtypes(options.host)
    fp8 = next((name for name in FP8_NAMES if name in ours_types), None)
    scratch = tempfile.mkdtemp(prefix="sweep-")
    # An empty tuning cache: the library's picks without --tune.
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "cache"))
    # The first run compiles the PTX (the driver caches it): outside every row's time.
    first = time.time()
    _, error = run_host(options.host, env, ["--m", 64, "--n", 64, "--k", 64, "--iters", 1, "--chosen"])
    if error:
        note(f"the host does not run: {error}")
        return 1
    note(f"{device}; host's types: {', '.join(ours_types)}; first run (PTX JIT) {time.time() - first:.1f} s")

    def over_budget():
        return time.time() - started > options.budget_s

    errors, broken = [], False
    for dtype, label in TYPES:
        if dtype not in wanted or dtype == "fp8" or dtype not in ours_types:
            continue
        for shape in LONG_K:
            found = {"error": "skipped: over --budget-s"} if over_budget() else accuracy(
                options.host, env, torch, cublas, dtype, shape, scratch
            )
            errors.append({"shape": "x".join(map(str, shape)), "type": label, **found})
            broken |= "error" in found

    jobs = [(dtype, label, shape) for dtype, label in TYPES if dtype in wanted for shape in shapes]
    results = {}
    for dtype, label, shape in sorted(jobs, key=lambda j: j[2][0] * j[2][1] * j[2][2]):
        shape_text = "x".join(map(str, shape))
        ours_name = fp8 if dtype == "fp8" else dtype
        if over_budget():
            mine, theirs = {"error": "skipped: over --budget-s"}, {}
            broken = True
        else:
            if ours_name in ours_types:
                mine = ours(options.host, env, ours_name, shape)
            else:
                mine = {"error": f"not yet: `host matmul --dtype` has no {label} (it takes {', '.join(ours_types)})"}
            theirs = cublas.measure(dtype, shape)
            # Only a type we lack, or a shape cuBLASLt refuses, is not a failure.
            broken |= "error" in mine and not mine["error"].startswith("not yet")
            broken |= "error" in theirs and not theirs["error"].startswith("n/a")
        ratio = theirs["ms"] / mine["ms"] if "ms" in mine and "ms" in theirs else None
        results[(dtype, shape)] = {"shape": shape_text, "type": label, "ours": mine, "cublas": theirs, "ratio": ratio}
        note(f"{label} {shape_text}: ours {fmt_ms(mine.get('ms'))} ms, cuBLAS {fmt_ms(theirs.get('ms'))} ms "
             f"({time.time() - started:.0f} s)")
    rows = [results[(dtype, shape)] for dtype, _, shape in jobs]

    print(f"\nThe sweep on {device}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: "
          f"ms are medians, L2 flushed before each launch; ratio = cuBLAS ms / ours ms (above 1: ours is faster).\n")
    print("| shape | type | ours ms | ours, kernel | cuBLAS ms | ratio | note |")
    print("|---|---|---:|---|---:|---:|---|")
    for row in rows:
        mine, theirs = row["ours"], row["cublas"]
        remarks = [x for x in (mine.get("error"), theirs.get("error")) if x]
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        if row["ratio"] is not None and row["ratio"] < BAR:
            ratio = f"**{ratio}**"
        kernel = mine.get("variant", "-")
        print(f"| {row['shape']} | {row['type']} | {fmt_ms(mine.get('ms'))} | {kernel} | {fmt_ms(theirs.get('ms'))} "
              f"| {ratio} | {'; '.join(remarks)} |")
    print("\n| type | shapes | geometric mean | below 0.90 |")
    print("|---|---:|---:|---:|")
    summary = {}
    for _, label in TYPES:
        ratios = [r["ratio"] for r in rows if r["type"] == label and r["ratio"] is not None]
        present = [r for r in rows if r["type"] == label]
        if not present:
            continue
        if not ratios:
            print(f"| {label} | 0 of {len(present)} | not yet | - |")
            continue
        mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        below = sum(1 for x in ratios if x < BAR)
        summary[label] = {"shapes": len(ratios), "geomean": mean, "below": below}
        print(f"| {label} | {len(ratios)} of {len(present)} | {mean:.2f} | {below} |")

    print("\nAccumulation error at long k: the largest |C - C64| over C, C64 the f64 product of the inputs "
          "rounded to the type; the same inputs on both sides.\n")
    print("| shape | type | ours (gemm's pick) | ours | cuBLAS | ours / cuBLAS |")
    print("|---|---|---|---:|---:|---:|")
    for found in errors:
        if "error" in found:
            print(f"| {found['shape']} | {found['type']} | - | - | - | {found['error']} |")
            continue
        over = found["ours"] / found["cublas"] if found["cublas"] > 0 else math.inf
        print(f"| {found['shape']} | {found['type']} | {found['variant']} | {found['ours']:.3e} | {found['cublas']:.3e} "
              f"| {over:.2f} |")
    print(f"\nsweep: {time.time() - started:.0f} s in all")
    if options.json:
        document = {
            "device": device,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "torch": torch.__version__,
            "rows": rows,
            "summary": summary,
            "accuracy": errors,
        }
        with open(options.json, "w") as f:
            json.dump(document, f, indent=1)
            f.write("\n")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
