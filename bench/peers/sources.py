#!/usr/bin/env python3
"""The lesson's source finding, as the lesson writes it, on the synthetic skies `host sky` draws:
in CuPy/cupyx on the GPU (the peer of `host sources`) and in NumPy/SciPy on the CPU (the
definition its results must equal).

    python3 sources.py HOST [--sides 2048,8192] [--runs N] [--scratch DIR]

For each side it writes the sky (and, at the first side, the same sky blanked with NaN outside a
circle, as radio images are), times the lesson's CuPy pipeline on it in f32 and f64 (CUDA events,
L2 not flushed: the image is the working set), and runs `host sources` on it (the GPU pipeline,
its own median time over --runs, its catalog and labels, checked against the project's CPU
reference). At the first side, SciPy runs the lesson's code on the image as f64, which is what
that CPU reference defines, and the GPU's results are compared with SciPy's too. Prints {"peers": {...}} on
stdout and the comparison on stderr; exits 1 when the project's results differ from SciPy's
beyond the issue's bar."""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.ndimage as cpu_ndimage

KAPPA, THRESHOLD = 3, 5
SIGMA_BAR, CENTROID_BAR, FLUX_BAR = 1e-6, 1e-4, 1e-5


def note(message):
    print(f"sources: {message}", file=sys.stderr)


def lesson(xp, ndimage, data, nan_aware):
    """The lesson's code (kappa_sigma_clipper, the 5σ threshold, label, center_of_mass and
    sum_labels) for NumPy or CuPy (`xp`). With `nan_aware`, NaN pixels are dropped before
    clipping, which is what nanmedian and nanstd do; the lesson's images have none."""
    data_flat = data.ravel()
    if nan_aware:
        data_flat = data_flat[~xp.isnan(data_flat)]
    rounds = 0
    while True:
        rounds += 1
        med = xp.median(data_flat)
        std = xp.std(data_flat)
        clipped_lower = data_flat.compress(data_flat > med - KAPPA * std)
        clipped_both = clipped_lower.compress(clipped_lower < med + KAPPA * std)
        if len(clipped_both) == len(data_flat):
            break
        data_flat = clipped_both
    stddev = xp.std(data_flat)
    threshold = THRESHOLD * stddev
    segmented = xp.where(data > threshold, 1, 0)
    labelled = xp.empty(data.shape)
    count = ndimage.label(segmented, output=labelled)
    index = xp.arange(1, count + 1)
    positions = ndimage.center_of_mass(data, labelled, index)
    fluxes = ndimage.sum_labels(data, labelled, index)
    return {
        "median": float(med),
        "sigma": float(stddev),
        "rounds": rounds,
        "kept": len(data_flat),
        "count": int(count),
        "labels": labelled,
        "positions": positions,
        "fluxes": fluxes,
    }


def cupy_times(data, runs):
    """Median and min ms of the lesson's CuPy pipeline on `data` (a NumPy image) in f32 and
    f64, or {} without CuPy."""
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as gpu_ndimage
    except ImportError as e:
        note(f"skipped the CuPy pipeline: {e}")
        return {}
    times = {}
    for dtype in ("float32", "float64"):
        image = cp.asarray(data.astype(dtype))
        lesson(cp, gpu_ndimage, image, nan_aware=True)  # warm-up: kernels compiled, pools filled
        samples = []
        for _ in range(runs):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            lesson(cp, gpu_ndimage, image, nan_aware=True)
            stop.record()
            stop.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, stop))
        times[dtype] = (statistics.median(samples), min(samples))
        del image
        cp.get_default_memory_pool().free_all_blocks()
    return times


def host_sources(host, image, runs, scratch):
    """`host sources` on `image`: its summary, its catalog and its labels."""
    catalog, labels = scratch / f"{image.stem}-host.csv", scratch / f"{image.stem}-labels.npy"
    # The lesson's mode: the pipeline the lesson's CuPy code runs, and SciPy's labels to match.
    command = [host, "--json", "sources", "--mode", "lesson", "--image", str(image), "--catalog", str(catalog)]
    command += ["--labels", str(labels), "--runs", str(runs)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stderr.strip()}")
    summary = json.loads(result.stdout)
    with open(catalog.with_suffix(".json")) as f:
        sources = json.load(f)["sources"]
    return summary, sources, np.load(labels)


def compare(name, summary, sources, labels, scipy):
    """Rows of (what, found, bar, passed): the project's results against SciPy's."""
    sigma = abs(summary["background"]["sigma"] / scipy["sigma"] - 1)
    rows = [
        ("background median", f"{summary['background']['median']:.9e} / {scipy['median']:.9e}", "equal",
         summary["background"]["median"] == scipy["median"]),
        ("σ, relative", f"{sigma:.1e}", f"<= {SIGMA_BAR:g}", sigma <= SIGMA_BAR),
        ("clipping rounds, pixels kept",
         f"{summary['background']['rounds']}, {summary['background']['kept']} / {scipy['rounds']}, {scipy['kept']}",
         "equal", (summary["background"]["rounds"], summary["background"]["kept"]) == (scipy["rounds"], scipy["kept"])),
        ("sources", f"{len(sources)} / {scipy['count']}", "equal", len(sources) == scipy["count"]),
    ]
    differ = int(np.count_nonzero(labels != scipy["labels"].astype(np.int64)))
    rows.append(("labels", f"{differ} pixels differ", "0", differ == 0))
    if len(sources) == scipy["count"] and scipy["count"] > 0:
        ours = np.array([[s["y"], s["x"]] for s in sources])
        theirs = np.array(scipy["positions"])
        centroid = float(np.abs(ours - theirs).max())
        fluxes = np.array([s["flux"] for s in sources])
        flux = float(np.abs(fluxes / np.asarray(scipy["fluxes"]) - 1).max())
        rows.append(("centroids, pixels", f"{centroid:.1e}", f"<= {CENTROID_BAR:g}", centroid <= CENTROID_BAR))
        rows.append(("fluxes, relative", f"{flux:.1e}", f"<= {FLUX_BAR:g}", flux <= FLUX_BAR))
    for what, found, bar, passed in rows:
        note(f"{name}: {what}: {found} (bar {bar}) {'PASS' if passed else 'FAIL'}")
    return all(passed for *_, passed in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("host", help="the project's host binary")
    parser.add_argument("--sides", default="2048,8192")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--scratch", type=Path)
    args = parser.parse_args()
    scratch = args.scratch or Path(tempfile.mkdtemp())
    scratch.mkdir(parents=True, exist_ok=True)
    sides = [int(s) for s in args.sides.split(",")]
    peers, agree, table = {}, True, []
    for i, side in enumerate(sides):
        for blank in ([False, True] if i == 0 else [False]):
            name = f"{side}" + ("-blank" if blank else "")
            image = scratch / f"sky-{name}.npy"
            command = [args.host, "sky", "--side", str(side), "--out", str(image)] + (["--blank"] if blank else [])
            subprocess.run(command, check=True, capture_output=True)
            data = np.load(image)
            summary, sources, labels = host_sources(args.host, image, args.runs, scratch)
            ours = summary["pipeline_ms"]
            if not blank:
                runs = args.runs if side <= 4096 else max(2, args.runs // 4)
                for dtype, (ms, min_ms) in cupy_times(data, runs).items():
                    key = f"sources_cupy_{dtype[-2:]}_{side}"
                    peers[key] = {
                        "library": f"CuPy/cupyx, the lesson's code ({dtype})",
                        "side": side,
                        "ms": ms,
                        "min_ms": min_ms,
                        "GBps": 4 * side * side / (ms * 1e-3) / 1e9,
                        "host_sources_ms": ours,
                    }
                    table.append(f"{side}² {dtype}: CuPy {ms:.2f} ms, host sources {ours:.3f} ms: {ms / ours:.0f}x")
            if i > 0:
                continue
            # SciPy's answer on the image as f64: the project's CPU definitions.
            start = time.perf_counter()
            scipy = lesson(np, cpu_ndimage, data.astype(np.float64), nan_aware=True)
            seconds = time.perf_counter() - start
            if not blank:
                peers[f"sources_scipy_{side}"] = {"library": "NumPy/SciPy, the lesson's code (f64)", "side": side,
                                                  "ms": seconds * 1e3, "min_ms": seconds * 1e3,
                                                  "GBps": 4 * side * side / seconds / 1e9}
            agree &= compare(f"{name}²", summary, sources, labels, scipy)
    for line in table:
        note(line)
    json.dump({"peers": peers}, sys.stdout, indent=1)
    print()
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
