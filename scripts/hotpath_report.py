#!/usr/bin/env python3
"""Tables from the samples of benchmarks/hotpath_profile.c.

Usage: hotpath_report.py SAMPLES [--top N] [--lib PATH=COPY ...]

Symbolizes each sample's stack with addr2line (the executable, built with debug info)
and, for stripped shared libraries, the nearest exported symbol (nm -D): so run it where
the profiled binary and the same shared libraries are, or name local copies with --lib
(for example --lib /lib/x86_64-linux-gnu/libc.so.6=./libc.so.6). Libraries without a copy
count under their file name. For each configuration it prints, for the application's
thread, what a tiny kernel's time went to by category, in us per kernel (samples scaled by
the raw configuration's CPU time per kernel, read from the profiled run's output when given
with --raw-cpu-us, else in samples), then the top functions by inclusive samples, per
thread kind (app: the thread that submits; lib: the library's threads).

A sample's category is the first in this order that names one of the three innermost of
the library's own functions on its stack (a function inlined into another counts as one
of them, innermost first: addr2line -i): done marks and counter waits (the driver under
xs_gpu_write_*), the handle table, command allocation, reaping, the budget, clock reads,
locks, the kernel lookup (HwCommandCreateCudaKernel's); else the driver's launch where the
innermost own function is the launch call (or none is: the driver's or libc's frames
without unwind information); else the innermost own function, listed by name.
"""
import argparse
import collections
import shutil
import subprocess
import sys

CATEGORIES = [
    ("done mark (driver)", ("xs_gpu_write_done",)),
    ("counter wait + mark (driver)", ("xs_gpu_write_then_wait",)),
    ("handle table", ("xs_handle_register", "xs_handle_get", "xs_handle_unregister",
                      "xs_handle_borrow", "xs_handle_return", "xs_handle_keep_recent")),
    ("command allocation", ("xs_cmd_new", "xs__cmd_free")),
    ("reaping", ("xs__complete_upto",)),
    ("budget", ("xs_budget_charge", "xs_budget_uncharge")),
    ("clock reads", ("xs_now_ns",)),
    ("locks", ("xs_mutex_lock", "xs_mutex_unlock")),
    # HwCommandCreateCudaKernel (xsched.h, inline) and HwCommandCreateResolvedKernel: the
    # kernel's CUfunction, from the library's cache (0.5) or the runtime's
    # cudaGetFuncBySymbol (its frames have no names of their own where the runtime is
    # linked statically).
    ("kernel lookup", ("cudaGetFuncBySymbol", "HwCommandCreateCudaKernel",
                       "HwCommandCreateResolvedKernel")),
]
# The launch calls: the library's, the runtime's, and hotpath_profile.c's raw one (the
# static runtime's frames under it have no names of their own).
LAUNCH = ("xs_gpu_module_launch", "xs_gpu_launch_kernel", "cudaLaunchKernel", "hipLaunchKernel",
          "tiny_raw")


class Symbolizer:
    def __init__(self, objects, copies):
        self.objects = sorted(objects)
        self.copies = copies
        self.cache = {}
        self.exports = {}

    def _object(self, pc):
        best = (0, "?")
        for base, path in self.objects:
            if base <= pc:
                best = (base, path)
        return best

    def _nearest_export(self, path, off):
        if path not in self.exports:
            out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                                 text=True).stdout
            syms = []
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 3:
                    syms.append((int(parts[0], 16), parts[2]))
            self.exports[path] = sorted(syms)
        best = "??"
        for addr, name in self.exports[path]:
            if addr > off:
                break
            best = name
        return best

    def name(self, pc, is_return):
        base, path = self._object(pc)
        short = path.rsplit("/", 1)[-1]
        local = self.copies.get(path, path)
        off = pc - base - (1 if is_return else 0)
        key = (path, off)
        if key in self.cache:
            return self.cache[key]
        if path == "/proc/self/exe" or path in self.copies or short.startswith("libc."):
            exe = self.copies.get(path, local)
            # -i: the chain of functions inlined at the address, innermost first (an
            # inlined lock wrapper would otherwise hide the function that took the lock).
            out = subprocess.run(["addr2line", "-f", "-i", "-e", exe, hex(off)],
                                 capture_output=True, text=True).stdout.split("\n")
            fns = [f for f in out[0::2] if f and f != "??"]
            if not fns:
                fns = [self._nearest_export(exe, off)]
            res = fns if path == "/proc/self/exe" else [short + ":" + f for f in fns]
        else:
            res = [short]
        self.cache[key] = res
        return res



def own(name):
    return ":" not in name and not name.startswith("lib") and name != "??"


def category(syms):
    owns = [s for s in syms if own(s)]
    first = owns[0] if owns else "?"
    for label, fns in CATEGORIES:
        if any(f in owns[:3] for f in fns):
            return label
    if first in LAUNCH or first in ("main", "?", "_start") and not own(syms[0]):
        return "driver launch"
    return "other: " + first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("samples")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--lib", action="append", default=[], help="PATH=COPY")
    ap.add_argument("--raw-cpu-us", type=float, default=0.0,
                    help="the raw configuration's CPU us per kernel in the profiled run")
    args = ap.parse_args()
    copies = dict(x.split("=", 1) for x in args.lib)
    for tool in ("addr2line", "nm"):
        if not shutil.which(tool):
            sys.exit("hotpath_report.py: %s (binutils) is missing here: copy the samples, the "
                     "profiled binary and the shared libraries to a machine that has it" % tool)

    configs, objects, samples, main_tid = [], [], [], None
    for line in open(args.samples):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "configs":
            configs = parts[1:]
        elif parts[0] == "main_tid":
            main_tid = int(parts[1])
        elif parts[0] == "obj":
            objects.append((int(parts[1], 16), parts[2] if len(parts) > 2 else "?"))
        elif parts[0] == "s":
            samples.append((int(parts[1]), int(parts[2]), [int(x, 16) for x in parts[3:]]))
    sym = Symbolizer(objects, copies)
    per_cfg = collections.Counter(c for c, t, st in samples if t == main_tid)
    raw_n = per_cfg.get(0, 0)
    scale = args.raw_cpu_us / raw_n if args.raw_cpu_us and raw_n else 0.0
    unit = "us/kernel" if scale else "samples"

    for ci, cname in enumerate(configs):
        mine = [s for s in samples if s[0] == ci]
        if not mine:
            continue
        cats = collections.Counter()
        incl = collections.Counter()
        threads = collections.Counter()
        for _, tid, stack in mine:
            frames = stack[2:]  # the handler and the signal trampoline
            if not frames:
                continue
            syms = sym.name(frames[0], False) + [n for pc in frames[1:] for n in sym.name(pc, True)]
            kind = "app" if tid == main_tid else "lib"
            threads[kind] += 1
            if kind == "app":
                cats[category(syms)] += 1
            for s in set(x for x in syms if own(x)):
                incl[(kind, s)] += 1
        print("== %s: %d samples (app %d, library threads %d)" %
              (cname, len(mine), threads["app"], threads["lib"]))
        print("  application thread, by category (%s):" % unit)
        for label, n in cats.most_common(args.top):
            print("    %-40s %6d  %s" % (label, n, "%.3f" % (n * scale) if scale else ""))
        print("  functions, inclusive samples:")
        for (kind, fn), n in incl.most_common(args.top):
            print("    %-4s %-50s %6d" % (kind, fn, n))


if __name__ == "__main__":
    main()
