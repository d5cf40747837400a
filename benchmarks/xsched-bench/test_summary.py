#!/usr/bin/env python3
"""xsched-bench ends with a summary of what it measured: after the scenarios' tables, one
row per configuration with the high lane's figure under native streams, hardware priority
and the library (over alone; preempt's submit-to-start in ms), the lower work kept, the
target word, and on the host backend the words that say no GPU was used.

Usage: test_summary.py PATH-TO-XSCHED-BENCH
"""
import re
import subprocess
import sys

BENCH = sys.argv[1]
p = subprocess.run([BENCH, "--backend", "host", "--quick", "--quiet", "--scenario",
                    "serve,preempt", "--modes", "native,native-prio,xsched",
                    "--duration", "0.4"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
assert p.returncode == 0, p.stdout
out = p.stdout.splitlines()
head = [i for i, line in enumerate(out) if line.startswith("summary: ")]
assert len(head) == 1, "no summary (or more than one):\n" + p.stdout
tail = out[head[0]:]
assert "HOST MODEL: no GPU was used" in "\n".join(tail[:2]), tail[:2]
assert tail[-1].startswith("done in "), tail[-1]
x = r"\d+\.\d+x"
ms = r"\d+\.\d+ ms"
serve = [line for line in tail if line.startswith("  serve 1H+7L/sgemm4096 ")]
assert len(serve) == 1 and re.search(r"%s +%s +%s \(xsched\) +\d\.\d{3} +\d\.\d{3}  \(model\)$"
                                     % (x, x, x), serve[0]), tail
pre = [line for line in tail if line.startswith("  preempt spin")]
assert len(pre) == 2 and all(re.search(r"%s +%s +%s \(xsched\) .* \(model\)$" % (ms, ms, ms), ln)
                             for ln in pre), tail
print("summary: %d lines, serve and preempt rows as expected" % len(tail))
