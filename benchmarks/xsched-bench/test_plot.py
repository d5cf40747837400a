#!/usr/bin/env python3
"""xsched-bench --plot: the files appear, with the data they should hold.

Usage: test_plot.py PATH-TO-XSCHED-BENCH

Runs short serve and preempt scenarios on the host backend twice: once with gnuplot on
PATH (PNG and SVG expected; this part is skipped when gnuplot is not installed) and once
with a PATH that has no gnuplot (data and scripts only, the run goes on). Exits 77 when
gnuplot is missing, after checking the second part.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import xml.dom.minidom

BENCH = os.path.abspath(sys.argv[1])
ARGS = ["--backend", "host", "--quick", "--quiet", "--scenario", "serve,preempt",
        "--modes", "native,xsched", "--duration", "0.4", "--tasks", "6"]
BASES = ["serve-1H+7L-sgemm4096", "preempt-spin0.5ms", "preempt-spin5.0ms"]


def run(outdir, path):
    env = dict(os.environ, PATH=path)
    p = subprocess.run([BENCH] + ARGS + ["--plot", outdir], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stdout
    return p.stdout


def blocks(path):
    """gnuplot data blocks (separated by two blank lines) as (label, rows)."""
    out, label, rows = [], None, []
    for line in open(path):
        line = line.strip()
        if line.startswith("#"):
            label = line[1:].split(":")[0].strip()
        elif line:
            rows.append([float(v) for v in line.split()])
        elif rows:
            out.append((label, rows))
            label, rows = None, []
    if rows:
        out.append((label, rows))
    return out


def check_data(outdir):
    for base in BASES:
        cdf = blocks(os.path.join(outdir, base + "-cdf.dat"))
        labels = [b[0] for b in cdf]
        ref = "idle device" if base.startswith("preempt") else "alone"
        assert labels == [ref, "native", "xsched"], (base, labels)
        for label, rows in cdf:
            lat = [r[0] for r in rows]
            frac = [r[1] for r in rows]
            assert lat == sorted(lat) and lat[0] > 0, (base, label)
            assert frac == sorted(frac) and abs(frac[-1] - 1.0) < 1e-9, (base, label)
        tl = blocks(os.path.join(outdir, base + "-timeline.dat"))
        # Per mode: high bars, then two sets of low bars; the high set holds the request
        # the panel is centred on, starting at 0.
        assert [b[0] for b in tl[0::3]] == ["native high", "xsched high"], tl
        for high in tl[0::3]:
            assert any(abs(r[0]) < 1e-9 and r[1] == 0 and r[2] > 0 for r in high[1])
        for f in ("-cdf.gp", "-timeline.gp"):
            assert os.path.getsize(os.path.join(outdir, base + f)) > 0


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # No gnuplot on PATH: data and scripts, a line that says so, no images.
        empty = os.path.join(tmp, "empty-bin")
        os.mkdir(empty)
        out = run(os.path.join(tmp, "nognuplot"), empty)
        assert "gnuplot not found" in out, out
        check_data(os.path.join(tmp, "nognuplot"))
        assert not [f for f in os.listdir(os.path.join(tmp, "nognuplot"))
                    if f.endswith((".png", ".svg"))]
        print("without gnuplot: data and scripts written, no images")

        if not shutil.which("gnuplot"):
            print("SKIP: gnuplot is not installed (scripts/setup-debian.sh installs it)")
            return 77
        d = os.path.join(tmp, "plots")
        run(d, os.environ.get("PATH", ""))
        check_data(d)
        for base in BASES:
            for what in ("cdf", "timeline"):
                png = os.path.join(d, "%s-%s.png" % (base, what))
                with open(png, "rb") as f:
                    assert f.read(8) == b"\x89PNG\r\n\x1a\n", png
                svg = xml.dom.minidom.parse(os.path.join(d, "%s-%s.svg" % (base, what)))
                assert svg.documentElement.tagName == "svg"
        print("with gnuplot: %d PNG and %d SVG files" % (2 * len(BASES), 2 * len(BASES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
