#!/usr/bin/env python3
"""xsched-bench's progress lines where stderr is a pipe (a log, `2>&1 | tee`): one plain
line per run, ending in ", done", in the order the runs are measured; none with --quiet.

Usage: test_progress.py PATH-TO-XSCHED-BENCH
"""
import subprocess
import sys

BENCH = sys.argv[1]
ARGS = ["--backend", "host", "--quick", "--scenario", "serve", "--modes", "native,xsched",
        "--duration", "0.4"]


def run(extra):
    p = subprocess.run([BENCH] + ARGS + extra, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    return [line for line in p.stderr.splitlines() if line.endswith(", done")]


lines = run([])
runs = [line.split("]")[0].strip() + "]" for line in lines]
# The alone baselines first, then each mode of the serve configuration.
want = ["[serve alone native]", "[serve-kernel alone native]",
        "[serve 1H+7L/sgemm4096 native]", "[serve 1H+7L/sgemm4096 xsched]"]
assert runs == want, "progress lines on a pipe:\n%s\nexpected runs %s" % (
    "\n".join(lines), want)
assert not run(["--quiet"]), "--quiet printed progress lines"
print("progress on a pipe: %d runs, one line each" % len(lines))
