#!/usr/bin/env python3
"""PyTorch and CuPy peers of the project's kernels, timed like libraries.cu: CUDA events
around each call, warm-up first, median and min of 30, L2 flushed before every call (outside
the events). Prints one JSON object, {"peers": {...}}, on stdout. A framework that is missing
is skipped with a note on stderr; a wrong result exits 1."""

import json
import statistics
import sys

RUNS, WARMUP = 30, 3
FLUSH_BYTES = 256 << 20
N_ADD = 1 << 28
SIDE = 8192
N_CONV1D = 1 << 26
N_MEDIAN = 1 << 22
F32_EPS = 2.0**-23
# The synthetic sky of `host sky --side 2048 --out FILE.npy` (the image `host label` and
# `host measure` draw with the same seed), and its level: 5 times its noise σ.
SKY_ENV = "LABEL_SKY"
SKY_LEVEL = 5 * 0.0133


def note(message):
    print(f"frameworks: {message}", file=sys.stderr)


def measure(launch, flush, event, elapsed_ms, synchronize):
    for _ in range(WARMUP):
        launch()
    synchronize()
    times = []
    for _ in range(RUNS):
        flush()
        start, stop = event(), event()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(elapsed_ms(start, stop))
    return statistics.median(times), min(times)


def entry(library, sizes, stats, rate_key, work):
    ms, min_ms = stats
    return {"library": library, **sizes, "ms": ms, "min_ms": min_ms, rate_key: work / (ms * 1e-3) / 1e9}


def expect(ok, what):
    if not ok:
        raise AssertionError(what)


def torch_peers(peers, shared):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        note(f"skipped torch.add and cuDNN conv2d: {e}")
        return
    if not torch.cuda.is_available():
        note("skipped torch.add and cuDNN conv2d: torch sees no GPU")
        return
    # f32 everywhere, like the project's kernels: no TF32 in cuDNN convolutions.
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)

    def uniform(*shape):
        return torch.rand(*shape, device=dev, generator=gen) * 2 - 1

    scratch = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=dev)

    def run(launch):
        return measure(
            launch,
            scratch.zero_,
            lambda: torch.cuda.Event(enable_timing=True),
            lambda a, b: a.elapsed_time(b),
            torch.cuda.synchronize,
        )

    a, b = uniform(N_ADD), uniform(N_ADD)
    c = torch.empty_like(a)
    stats = run(lambda: torch.add(a, b, out=c))
    expect(torch.equal(c, a + b), "torch.add: wrong sum")
    peers["vector_add_f32"] = entry("torch.add", {"n": N_ADD}, stats, "GBps", 3 * 4 * N_ADD)
    del a, b, c

    image, weight = uniform(1, 1, SIDE, SIDE), uniform(1, 1, 5, 5)
    result = {}

    def conv():
        result["out"] = F.conv2d(image, weight, padding=2)

    stats = run(conv)
    peers["conv2d_5x5_f32"] = entry("cuDNN (torch conv2d)", {"side": SIDE}, stats, "GBps", 2 * 4 * SIDE * SIDE)
    # Handed to the CuPy peer, which must agree with cuDNN on the same image and filter.
    shared["conv2d"] = (image[0, 0], weight[0, 0], result["out"][0, 0])


def cupy_peers(peers, shared):
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as ndimage
    except ImportError as e:
        note(f"skipped cupyx.scipy.ndimage.correlate and correlate1d: {e}")
        return
    try:
        cp.cuda.runtime.getDeviceCount()
    except cp.cuda.runtime.CUDARuntimeError as e:
        note(f"skipped the CuPy peers: {e}")
        return
    rng = cp.random.default_rng(2)

    def uniform(*shape):
        return rng.random(shape, dtype=cp.float32) * 2 - 1

    scratch = cp.empty(FLUSH_BYTES, dtype=cp.uint8)

    def run(launch):
        return measure(
            launch,
            lambda: scratch.fill(0),
            cp.cuda.Event,
            cp.cuda.get_elapsed_time,
            cp.cuda.Stream.null.synchronize,
        )

    if "conv2d" in shared:
        torch_image, torch_weight, torch_out = shared["conv2d"]
        image, weight, from_cudnn = cp.asarray(torch_image), cp.asarray(torch_weight), cp.asarray(torch_out)
    else:
        image, weight, from_cudnn = uniform(SIDE, SIDE), uniform(5, 5), None
    out = cp.empty_like(image)
    stats = run(lambda: ndimage.correlate(image, weight, output=out, mode="constant", cval=0.0))
    if from_cudnn is not None:
        # Loose: cuDNN may pick an FFT or Winograd algorithm; a wrong padding or a flipped
        # filter would be off by far more.
        worst = float(cp.abs(out - from_cudnn).max())
        expect(worst <= 1e-3, f"cupyx correlate and cuDNN differ by {worst}")
    peers["conv2d_5x5_f32_cupyx"] = entry(
        "cupyx.scipy.ndimage.correlate", {"side": SIDE}, stats, "GBps", 2 * 4 * SIDE * SIDE
    )
    del image, out, from_cudnn
    shared.pop("conv2d", None)

    signal, taps = uniform(N_CONV1D), uniform(7)
    out = cp.empty_like(signal)
    stats = run(lambda: ndimage.correlate1d(signal, taps, output=out, mode="constant", cval=0.0))
    # Zero padding, taps centred: out[i] = sum_j taps[j] * signal[i + j - 3].
    padded = cp.pad(signal, 3)
    want = sum(taps[j] * padded[j : j + N_CONV1D] for j in range(7))
    worst = float(cp.abs(out - want).max())
    expect(worst <= 4 * 7 * F32_EPS, f"cupyx correlate1d is off by {worst}")
    peers["conv1d_7_f32"] = entry(
        "cupyx.scipy.ndimage.correlate1d", {"n": N_CONV1D}, stats, "GBps", 2 * 4 * N_CONV1D
    )
    del signal, out, padded, want

    # The median of 2^22 values (host select's default size), as the lesson's clipping takes it.
    import numpy as np

    values = uniform(N_MEDIAN)
    result = {}
    stats = run(lambda: result.__setitem__("median", cp.median(values)))
    # CuPy averages the two middle values in f32; NumPy's median of the same values in f64.
    got, want = float(result["median"]), float(np.median(cp.asnumpy(values).astype(np.float64)))
    expect(abs(got - want) <= F32_EPS * abs(want), f"cupy.median gave {got}, want {want}")
    peers["median_f32_4194304_cupy"] = entry("cupy.median", {"n": N_MEDIAN}, stats, "GBps", 4 * N_MEDIAN)

    label_peers(peers, cp, ndimage, run)


def label_peers(peers, cp, ndimage, run):
    """cupyx.scipy.ndimage.label on the sky's detection mask, 4- and 8-connected, and
    sum_labels with center_of_mass on its labels, as the lesson measures its sources."""
    import os

    path = os.environ.get(SKY_ENV)
    if not path:
        note(f"skipped the label and measure peers: set {SKY_ENV} to `host sky --side 2048 --out` .npy")
        return
    import numpy as np

    image = cp.asarray(np.load(path)).astype(cp.float32)
    side = image.shape[1]
    mask = image.astype(cp.float64) > SKY_LEVEL
    structures = {4: None, 8: cp.ones((3, 3), dtype=cp.int32)}
    labels, count = None, 0
    for connectivity, structure in structures.items():
        stats = run(lambda: ndimage.label(mask, structure=structure))
        found, n = ndimage.label(mask, structure=structure)
        expect(n > 0, f"cupyx label found no source in {path}")
        if connectivity == 4:
            labels, count = found, n
        peers[f"label{side}_{connectivity}"] = entry(
            "cupyx.scipy.ndimage.label", {"side": side, "sources": int(n)}, stats, "GBps", 8 * side * side
        )
    index = cp.arange(1, count + 1)

    def sums():
        ndimage.sum_labels(image, labels, index)
        ndimage.center_of_mass(image, labels, index)

    stats = run(sums)
    flux = ndimage.sum_labels(image, labels, index)
    expect(bool((flux > 0).all()), "a source above a positive level with no positive flux")
    peers[f"measure{side}"] = entry(
        "cupyx.scipy.ndimage.sum_labels + center_of_mass", {"side": side, "sources": int(count)}, stats, "GBps",
        8 * side * side,
    )


def main():
    peers, shared = {}, {}
    try:
        torch_peers(peers, shared)
        cupy_peers(peers, shared)
    except AssertionError as e:
        note(f"wrong result: {e}")
        return 1
    json.dump({"peers": peers}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
