#!/usr/bin/env python3
"""The source finders radio astronomers use, BANE + Aegean (AegeanTools) and PyBDSF, beside
`host sources`, on the survey skies `host sky --survey` draws: each one's wall time from the FITS
file to its catalog, and its catalog scored against the sky's truth by `host score`, as
`host sources --truth` scores ours (the same matching, zones and medians).

    python3 finders.py HOST [--side 4096] [--skies primary-beam:2026,constant:7,...]
                            [--finders host,aegean,pybdsf] [--cores N] [--cpu] [--scratch DIR]
                            [--limit-s S] [--pybdsf-maxpix N] [--json OUT]

Every finder reads the same file, as `host sky` writes it: its radio header gives the celestial
WCS and the beam that both peers need (a SIN projection with 1″ pixels, a round beam of FWHM
2.355 pixels, σ 1, and 1.4 GHz, which PyBDSF is also passed). The peers' catalogs' RA and Dec go
back to 0-based pixels through that WCS, and their integrated fluxes (Jy) become sums of pixels,
the truth's unit, times the beam's area in pixels. Each peer runs as a user runs it:
defaults, every core (--cores), Aegean's component table and PyBDSF's source list; but PyBDSF
is given `thresh='hard'` (islands at 3σ seeded at 5σ, what its documentation describes): with
its default, it picks the false-detection-rate threshold on these skies (2.03σ) and had not
finished fitting after an hour. Each time is
the wall time of the finder's processes, Python's start included, as `host sources` is timed
(its CUDA start included; its own pipeline time is printed beside). A peer still running after
--limit-s seconds is stopped: its row gives that time as a lower bound and no score. After each
sky, each peer's time over ours: over `host sources`' own file-to-catalog time (the FITS file
read to the catalog written, as it reports it: its process's CUDA start is not in it, as the
peers' Python start is in theirs) and over its process's wall time. PyBDSF
fits the survey skies' largest islands (the core's and the shell's) for hours with every setting
tried; --pybdsf-maxpix N passes its `maxpix_isl`, so that islands of more than N pixels are left
out and their sources count as missed. Prints a table on stdout and, with --json, writes every
score."""

import argparse
import datetime
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
from astropy.io import fits
from astropy.wcs import WCS

FINDERS = ("host", "aegean", "pybdsf")


def note(message):
    print(f"finders: {message}", file=sys.stderr, flush=True)


class OverLimit(Exception):
    """A finder still running when its time ran out: `seconds` is a lower bound of its time."""

    def __init__(self, seconds):
        super().__init__(f"over {seconds:.0f} s")
        self.seconds = seconds


def run(command, log, limit=None):
    """Runs `command`, its output to `log`; returns its wall seconds; exits on failure, raises
    OverLimit (after stopping it) when it runs past `limit` seconds."""
    start = time.perf_counter()
    with open(log, "w") as out:
        # A session of its own, so that stopping it stops its worker processes too (PyBDSF's
        # would go on taking every core from the finders after it).
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            status = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise OverLimit(time.perf_counter() - start)
    seconds = time.perf_counter() - start
    if status != 0:
        tail = Path(log).read_text(errors="replace").splitlines()[-15:]
        sys.exit(f"finders: {' '.join(map(str, command[:3]))} … failed ({status}):\n" + "\n".join(tail))
    return seconds


class Radio:
    """What the peers read from an image's radio header: its celestial WCS, its beam's area in
    pixels (π/(4 ln 2) BMAJ BMIN over the pixel's area: Jy times it is a sum of Jy/beam pixels),
    and its frequency."""

    def __init__(self, image):
        header = fits.getheader(image)
        missing = [k for k in ("CTYPE1", "CDELT1", "CDELT2", "BMAJ", "BMIN", "RESTFRQ") if k not in header]
        if missing:
            sys.exit(f"finders: {image} has no {', '.join(missing)} in its header (a `host sky` older than its "
                     "radio header?)")
        self.wcs = WCS(header)
        pixel_deg2 = abs(header["CDELT1"] * header["CDELT2"])
        self.beam_pixels = math.pi / (4.0 * math.log(2.0)) * header["BMAJ"] * header["BMIN"] / pixel_deg2
        self.frequency = header["RESTFRQ"]


def to_pixels(wcs, ra, dec):
    x, y = wcs.all_world2pix(np.asarray(ra, float), np.asarray(dec, float), 0)
    return x, y


def write_detections(path, x, y, peak, flux, snr):
    with open(path, "w") as out:
        out.write("x,y,peak,flux,snr\n")
        for row in zip(x, y, peak, flux, snr):
            out.write(",".join(repr(float(v)) for v in row) + "\n")


def read_csv(path, first):
    """A CSV whose header line starts with `first` (PyBDSF's begins with '# ' and comments)."""
    lines = Path(path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("# ").startswith(first))
    names = [n.strip() for n in lines[start].lstrip("# ").split(",")]
    rows = [line.split(",") for line in lines[start + 1:] if line.strip() and not line.startswith("#")]
    return {name: np.array([float(r[i]) for r in rows]) for i, name in enumerate(names) if rows and _numeric(rows[0][i])}


def _numeric(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def aegean(image, radio, work, cores, limit):
    python = [sys.executable, "-c"]
    cli = "import sys; from AegeanTools.CLI.{0} import main; sys.argv[0] = '{0}'; sys.exit(main())"
    seconds = run(python + [cli.format("BANE"), str(image), "--cores", str(cores)], work / "bane.log", limit)
    table = work / "aegean.csv"
    try:
        seconds += run(
            python + [cli.format("aegean"), str(image), "--autoload", "--cores", str(cores), "--table", str(table)],
            work / "aegean.log", limit and limit - seconds,
        )
    except OverLimit as over:
        raise OverLimit(seconds + over.seconds)
    comp = read_csv(work / "aegean_comp.csv", "island")
    x, y = to_pixels(radio.wcs, comp["ra"], comp["dec"])
    detections = work / "aegean-detections.csv"
    write_detections(detections, x, y, comp["peak_flux"], comp["int_flux"] * radio.beam_pixels,
                     comp["peak_flux"] / comp["local_rms"])
    return seconds, detections


def pybdsf(image, radio, work, cores, limit, maxpix_isl=None):
    catalog = work / "pybdsf.csv"
    # PyBDSF's own option to leave out islands of more pixels than this: with it, a sky whose
    # largest island PyBDSF fits for hours gets a catalog of everything else.
    leave_out = f", maxpix_isl={maxpix_isl}" if maxpix_isl else ""
    script = (
        "import sys, bdsf\n"
        f"image = bdsf.process_image({str(image)!r}, frequency={radio.frequency}, thresh='hard', quiet=True,"
        f" ncores={cores}{leave_out})\n"
        f"image.write_catalog(outfile={str(catalog)!r}, format='csv', catalog_type='srl', clobber=True)\n"
    )
    seconds = run([sys.executable, "-c", script], work / "pybdsf.log", limit)
    return seconds, pybdsf_detections(catalog, radio, work)


def pybdsf_detections(catalog, radio, work):
    """PyBDSF's source list `catalog` as detections in pixels (a catalog made elsewhere, from the
    same sky, is scored by passing it here)."""
    srl = read_csv(catalog, "Source_id")
    x, y = to_pixels(radio.wcs, srl["RA"], srl["DEC"])
    detections = work / "pybdsf-detections.csv"
    write_detections(detections, x, y, srl["Peak_flux"], srl["Total_flux"] * radio.beam_pixels,
                     srl["Peak_flux"] / srl["Isl_rms"])
    return detections


def score(host, detections, truth):
    out = subprocess.run([host, "score", "--catalog", str(detections), "--truth", str(truth), "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"finders: host score failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def ours(host, image, truth, cpu):
    """`host sources` on the GPU (its own CPU check off: the tests and `--check` cover it), or
    with `cpu` its CPU reference: its process's wall seconds, its score, and its pipeline's and
    its file-to-catalog milliseconds as it reports them."""
    start = time.perf_counter()
    where = ["--cpu"] if cpu else ["--no-check"]
    out = subprocess.run([host, "sources", "--image", str(image), "--truth", str(truth), *where, "--json"],
                         capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"finders: host sources failed: {out.stderr.strip()}")
    summary = json.loads(out.stdout)
    return seconds, summary, summary["file_to_catalog_ms"]


def row(finder, sky, seconds, s, pipeline_ms=None, file_to_catalog_ms=None):
    e = s["errors_above"]
    pct = lambda v: "-" if v is None else f"{100 * v:.2f}%"
    return {
        "finder": finder, "sky": sky, "seconds": seconds, "pipeline_ms": pipeline_ms,
        "file_to_catalog_ms": file_to_catalog_ms,
        "detections": s["detections"], "on_core": s["on_core"], "on_shell": s["on_shell"],
        "completeness_above": s["completeness_above"], "reliability": s["reliability"],
        "position_px": e["position"], "peak": e["peak"], "flux": e["flux"],
        "line": (f"{finder:<8} {sky:<18} {seconds:8.2f} s  {s['detections']:5d}  "
                 f"{s['completeness_above']['value']:.4f} ({s['completeness_above']['count']}/"
                 f"{s['completeness_above']['of']})  {s['reliability']['value']:.4f} "
                 f"({s['reliability']['of'] - s['reliability']['count']} false)  "
                 f"{e['position'] or float('nan'):.4f} px  {pct(e['peak'])}  {pct(e['flux'])}  "
                 f"core/shell {s['on_core']}/{s['on_shell']}"),
    }


def speedups(rows):
    """Each peer's wall time over ours, on one sky: over our file-to-catalog time, and over our
    process's wall time. A peer stopped at its limit gives a lower bound (≥)."""
    ours = next((r for r in rows if r["finder"] == "host"), None)
    if ours is None:
        return []
    lines = []
    for peer in (r for r in rows if r["finder"] != "host"):
        seconds = peer.get("seconds", peer.get("over_seconds"))
        bound = "≥ " if "over_seconds" in peer else ""
        ratio, wall = seconds / (ours["file_to_catalog_ms"] / 1e3), seconds / ours["seconds"]
        peer["speedup"] = {"over": ours["finder"], "file_to_catalog": ratio, "wall": wall, "lower_bound": bool(bound)}
        lines.append(f"  {peer['finder']} / {ours['finder']}: {bound}{ratio:.0f}x its file to catalog "
                     f"({ours['file_to_catalog_ms']:.1f} ms), {bound}{wall:.1f}x its process's wall ({ours['seconds']:.2f} s)")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("host", help="the host binary")
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--skies", default="primary-beam:2026,primary-beam:7,constant:2026,constant:7",
                        help="noise-profile:seed, comma-separated")
    parser.add_argument("--finders", default=",".join(FINDERS))
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--cpu", action="store_true", help="host sources on the CPU (a machine without a GPU)")
    parser.add_argument("--scratch", type=Path)
    parser.add_argument("--limit-s", type=float, help="stop a peer after this many seconds (a lower bound)")
    parser.add_argument("--pybdsf-maxpix", type=int,
                        help="PyBDSF's maxpix_isl: islands of more pixels are left out (and not scored)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    finders = args.finders.split(",")
    if unknown := [f for f in finders if f not in FINDERS]:
        sys.exit(f"finders: unknown finder {unknown} (known: {', '.join(FINDERS)})")
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="finders-"))
    rows = []
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    # Where ours ran: `host sources` names its device (the CPU reference says so).
    device = None
    print(f"{'finder':<8} {'sky':<18} {'wall':>10}  {'found':>5}  completeness>10σ  reliability  "
          "position, peak, flux errors >20σ")
    for sky in args.skies.split(","):
        profile, seed = sky.split(":")
        work = scratch / f"{profile}-{seed}"
        work.mkdir(parents=True, exist_ok=True)
        image, truth = work / "sky.fits", work / "sky-truth.csv"
        run([args.host, "sky", "--side", str(args.side), "--survey", "--noise-profile", profile, "--seed", seed,
             "--out", str(image)], work / "sky.log")
        name = f"{profile} {seed}"
        radio = Radio(image)
        if "host" in finders:
            seconds, summary, to_catalog_ms = ours(args.host, image, truth, args.cpu)
            device = device or summary.get("device")
            pipeline_ms = summary.get("pipeline_ms")
            rows.append(row("host", name, seconds, summary["score"], pipeline_ms, to_catalog_ms))
            print(rows[-1]["line"] + f"  (file to catalog {to_catalog_ms:.1f} ms"
                  + (f", pipeline {pipeline_ms:.1f} ms)" if pipeline_ms else ")"), flush=True)
        for finder, call in (("aegean", aegean), ("pybdsf", partial(pybdsf, maxpix_isl=args.pybdsf_maxpix))):
            if finder in finders:
                try:
                    seconds, detections = call(image, radio, work, args.cores, args.limit_s)
                except OverLimit as over:
                    rows.append({"finder": finder, "sky": name, "over_seconds": over.seconds,
                                 "line": f"{finder:<8} {name:<18} > {over.seconds:6.1f} s  (stopped: no catalog)"})
                    print(rows[-1]["line"], flush=True)
                    continue
                rows.append(row(finder, name, seconds, score(args.host, detections, truth)))
                print(rows[-1]["line"], flush=True)
        for line in speedups([r for r in rows if r["sky"] == name]):
            print(line, flush=True)
    if args.json:
        document = {"device": device, "date": date, "side": args.side, "cores": args.cores, "rows": rows}
        args.json.write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
