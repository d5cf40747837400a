#!/usr/bin/env python3
"""Two models on one GPU in one process: a latency-critical ResNet-18 and a best-effort
ResNet-50, each in its own thread on its own torch.cuda.Stream.

- high: ResNet-18, batch 1, a fixed request rate (default 20 req/s); each request is
  timed from submission to completion;
- low: ResNet-50, batch 8, back to back; throughput in images/s.

Modes (each run for --duration seconds after --warmup seconds):
  alone        the high model only, no scheduler
  low-alone    the low model only, no scheduler (reference throughput)
  native       both models, equal streams, no scheduler
  native-prio  both, the high model on a hardware high-priority stream (priority=-1)
  xsched       both through XQueues with HPF (high priority 1, low 0); each forward is a
               launch callback (the low model's is split into --low-chunks commands so
               that it can be suspended between them)
  xsched-prio  as xsched, the high model's stream also of high hardware priority

Random weights (weights=None): nothing is downloaded. Needs PyTorch, torchvision, a CUDA
or ROCm GPU and libxsched built with its CUDA or HIP backend (XSCHED_LIBRARY=...).

  python3 examples/python/two_models.py --duration 20 --graphs --json results.json
"""
import argparse
import collections
import datetime
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bindings", "python"))

MODES = ("alone", "low-alone", "native", "native-prio", "xsched", "xsched-prio")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="alone,native,native-prio,xsched",
                   help="comma-separated, from: " + ", ".join(MODES))
    p.add_argument("--duration", type=float, default=20.0, help="seconds measured per mode")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    p.add_argument("--rate", type=float, default=20.0, help="high-priority requests/s")
    p.add_argument("--high-batch", type=int, default=1)
    p.add_argument("--low-batch", type=int, default=8)
    p.add_argument("--low-chunks", type=int, default=0,
                   help="commands per low-priority forward (0: one per residual block)")
    p.add_argument("--graphs", action="store_true",
                   help="replay CUDA graphs (one per forward or chunk) in every mode")
    p.add_argument("--level", default="max", help="XQueue preemption level: 1, 2 or max")
    p.add_argument("--low-threshold", type=int, default=0,
                   help="low XQueue: commands in flight (0: 2 at Lv1, where a suspension "
                        "waits for them; the library's default at Lv2, where the gate "
                        "stops the stream at the next command)")
    p.add_argument("--low-batch-size", type=int, default=0,
                   help="low XQueue: commands per completion point (0: 1 at Lv1, the "
                        "library's default at Lv2)")
    p.add_argument("--switch-interval", type=float, default=0.001,
                   help="sys.setswitchinterval (s), the same in every mode")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="also write the results as JSON (to PATH, or stdout)")
    a = p.parse_args()
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in a.modes:
        if m not in MODES:
            p.error("unknown mode %r" % m)
    return a


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Model:
    """A model split into sequential stages, each run eagerly or as a CUDA graph replay."""

    def __init__(self, torch, net, batch, stages, dtype, graphs, device):
        self.torch = torch
        self.x = torch.randn(batch, 3, 224, 224, device=device, dtype=dtype)
        self.x = self.x.contiguous(memory_format=torch.channels_last)
        self.stages = stages
        self.graphs = None
        self.outs = None
        self._warm()
        if graphs:
            self._capture()

    def _eager_stage(self, i, x):
        with self.torch.inference_mode():
            return self.stages[i](x)

    def _warm(self):
        torch = self.torch
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(5):
                y = self.x
                for i in range(len(self.stages)):
                    y = self._eager_stage(i, y)
        s.synchronize()

    def _capture(self):
        torch = self.torch
        self.graphs, self.outs = [], []
        y = self.x
        with torch.inference_mode():
            for st in self.stages:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = st(y)
                self.graphs.append(g)
                self.outs.append(out)
                y = out
        torch.cuda.synchronize()

    def nstages(self):
        return len(self.stages)

    def run_stage(self, i):
        """Enqueue stage i on the current stream."""
        if self.graphs is not None:
            self.graphs[i].replay()
            return None
        # Eager: each stage's input is the previous stage's last output.
        x = self.x if i == 0 else self._last
        self._last = self._eager_stage(i, x)
        return None

    def run_all(self):
        for i in range(len(self.stages)):
            self.run_stage(i)


def split_resnet(torch, net, chunks):
    """Stages of a torchvision ResNet: stem, residual blocks, head; regrouped into
    ``chunks`` stages when chunks > 0."""
    nn = torch.nn
    stem = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool)
    blocks = [b for layer in (net.layer1, net.layer2, net.layer3, net.layer4) for b in layer]
    head = nn.Sequential(net.avgpool, nn.Flatten(1), net.fc)
    parts = [stem] + blocks + [head]
    if chunks <= 0 or chunks >= len(parts):
        return parts
    per = -(-len(parts) // chunks)
    return [nn.Sequential(*parts[i:i + per]) for i in range(0, len(parts), per)]


class Run:
    """One mode: the two threads and their measurements."""

    def __init__(self, args, torch, high, low, mode):
        self.args, self.torch, self.high, self.low, self.mode = args, torch, high, low, mode
        self.lat = []          # ms, high requests submitted in the measured window
        self.late = 0          # high requests submitted after their arrival time + 1 period
        self.low_done = []     # completion times of low batches
        self.stop = threading.Event()
        self.errors = []
        self.stats = {}

    # -- streams and queues ----------------------------------------------------------
    def setup(self):
        torch, m = self.torch, self.mode
        prio_high = m in ("native-prio", "xsched-prio")
        self.s_high = torch.cuda.Stream(priority=-1) if prio_high else torch.cuda.Stream()
        self.s_low = torch.cuda.Stream()
        self.xq_high = self.xq_low = None
        if m.startswith("xsched"):
            import xsched
            xsched.set_scheduler(xsched.Scheduler.LOCAL, xsched.Policy.HPF)
            level = "max" if self.args.level == "max" else int(self.args.level)
            self.xq_high = xsched.XQueue(self.s_high, level=level, priority=1)
            self.xq_low = xsched.XQueue(self.s_low, level=level, priority=0)
            self.level = int(self.xq_low.preempt_level)
            lv1 = self.level == xsched.PreemptLevel.BLOCK
            t = self.args.low_threshold or (2 if lv1 else xsched.DEFAULT_THRESHOLD)
            b = self.args.low_batch_size or (1 if lv1 else xsched.DEFAULT_BATCH_SIZE)
            self.xq_low.set_launch_config(t, b)
            self.launch_config = (t, b)

    def teardown(self):
        for xq in (self.xq_high, self.xq_low):
            if xq is not None:
                self.stats[("high" if xq is self.xq_high else "low")] = xq.stats().as_dict()
                xq.close()

    # -- threads -----------------------------------------------------------------------
    def high_loop(self, t_measure, t_end):
        torch = self.torch
        period = 1.0 / self.args.rate
        t_next = time.perf_counter()
        while True:
            now = time.perf_counter()
            if now >= t_end:
                break
            if now < t_next:
                time.sleep(t_next - now)
            t0 = time.perf_counter()
            if t0 > t_next + period:
                self.late += 1
            if self.xq_high is not None:
                cmd = self.xq_high.submit_callable(self.high.run_all)
                cmd.wait()
                cmd.close()
                self.s_high.synchronize()
            else:
                with torch.cuda.stream(self.s_high):
                    self.high.run_all()
                self.s_high.synchronize()
            t1 = time.perf_counter()
            if t0 >= t_measure:
                self.lat.append((t1 - t0) * 1e3)
            t_next += period
            if t_next < t1 - period:  # far behind: do not burst to catch up
                t_next = t1

    def low_loop(self):
        torch = self.torch
        pending = collections.deque()
        n = self.low.nstages()
        while not self.stop.is_set():
            if self.xq_low is not None:
                last = None
                for i in range(n):
                    last = self.xq_low.submit_callable(self.low.run_stage, i)
                pending.append(last)  # the others are submit-and-forget
            else:
                with torch.cuda.stream(self.s_low):
                    self.low.run_all()
                    ev = torch.cuda.Event()
                    ev.record()
                pending.append(ev)
            if len(pending) >= 2:  # two batches queued: wait for the older one
                self._retire(pending.popleft())
        while pending:
            self._retire(pending.popleft())

    def _retire(self, h):
        if self.xq_low is not None:
            h.wait()
            h.close()
        else:
            h.synchronize()
        self.low_done.append(time.perf_counter())

    def _guard(self, fn, *a):
        try:
            fn(*a)
        except BaseException as e:  # report, and let the run end
            self.errors.append(e)
            self.stop.set()
            raise

    def execute(self):
        a = self.args
        self.xq_high = self.xq_low = None
        try:
            self.setup()
            t_start = time.perf_counter()
            t_measure = t_start + a.warmup
            t_end = t_measure + a.duration
            threads = []
            if self.mode != "low-alone":
                threads.append(threading.Thread(target=self._guard, name="high",
                                                args=(self.high_loop, t_measure, t_end)))
            if self.mode != "alone":
                threads.append(threading.Thread(target=self._guard, name="low",
                                                args=(self.low_loop,)))
            for t in threads:
                t.start()
            if self.mode == "low-alone":
                time.sleep(max(0.0, t_end - time.perf_counter()))
            else:
                threads[0].join()
            self.stop.set()
            for t in threads:
                t.join()
        finally:
            self.teardown()
        if self.errors:
            raise self.errors[0]
        low_n = sum(1 for t in self.low_done if t_measure <= t <= t_end)
        res = {
            "high_requests": len(self.lat),
            "high_p50_ms": percentile(self.lat, 50) if self.lat else None,
            "high_p99_ms": percentile(self.lat, 99) if self.lat else None,
            "high_mean_ms": statistics.fmean(self.lat) if self.lat else None,
            "high_max_ms": max(self.lat) if self.lat else None,
            "high_late": self.late,
            "low_img_per_s": low_n * a.low_batch / a.duration if self.mode != "alone" else None,
        }
        if self.mode.startswith("xsched"):
            res["preempt_level"] = self.level
            res["low_launch_config"] = self.launch_config
            res["xqueue_stats"] = self.stats
        return res


def main():
    args = parse_args()
    import torch
    import torchvision

    if not torch.cuda.is_available():
        sys.exit("two_models.py needs a CUDA or ROCm GPU")
    sys.setswitchinterval(args.switch_interval)
    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    torch.backends.cudnn.benchmark = True
    dtype = getattr(torch, args.dtype)

    r18 = torchvision.models.resnet18(weights=None).to(dev, dtype).eval()
    r50 = torchvision.models.resnet50(weights=None).to(dev, dtype).eval()
    r18 = r18.to(memory_format=torch.channels_last)
    r50 = r50.to(memory_format=torch.channels_last)
    high = Model(torch, r18, args.high_batch, [r18], dtype, args.graphs, dev)
    low = Model(torch, r50, args.low_batch, split_resnet(torch, r50, args.low_chunks), dtype,
                args.graphs, dev)

    info = {
        "device": torch.cuda.get_device_name(args.device),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
        "config": {k: v for k, v in vars(args).items() if k != "json"},
        "low_commands_per_batch": low.nstages(),
    }
    if any(m.startswith("xsched") for m in args.modes):
        import xsched
        info["libxsched"] = xsched.library_path
    print("# %s, torch %s, %s, graphs=%s, %d low commands/batch, %.0f s per mode"
          % (info["device"], info["torch"], args.dtype, args.graphs, low.nstages(),
             args.duration), flush=True)

    results = {}
    for mode in args.modes:
        print("running %-12s ..." % mode, end=" ", flush=True)
        try:
            results[mode] = Run(args, torch, high, low, mode).execute()
            r = results[mode]
            print("high p50 %s p99 %s ms, low %s img/s" % (
                _f(r["high_p50_ms"]), _f(r["high_p99_ms"]), _f(r["low_img_per_s"], 1)),
                flush=True)
        except Exception as e:  # e.g. no CUDA backend in this libxsched
            results[mode] = {"error": "%s: %s" % (type(e).__name__, e)}
            print("skipped (%s: %s)" % (type(e).__name__, e), flush=True)
        torch.cuda.synchronize()

    base_low = results.get("low-alone", {}).get("low_img_per_s")
    print()
    print("%-12s %10s %10s %10s %8s %12s %s" % ("mode", "p50 ms", "p99 ms", "max ms", "reqs",
                                               "low img/s", ""))
    for mode in args.modes:
        r = results[mode]
        if "error" in r:
            print("%-12s %s" % (mode, r["error"]))
            continue
        extra = ""
        if base_low and r["low_img_per_s"] is not None:
            extra = "(%.0f%% of low alone)" % (100.0 * r["low_img_per_s"] / base_low)
        print("%-12s %10s %10s %10s %8d %12s %s" % (
            mode, _f(r["high_p50_ms"]), _f(r["high_p99_ms"]), _f(r["high_max_ms"]),
            r["high_requests"], _f(r["low_img_per_s"], 1), extra))

    if args.json:
        doc = dict(info, results=results)
        text = json.dumps(doc, indent=2, default=str)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")


def _f(v, nd=2):
    return "-" if v is None else ("%.*f" % (nd, v))


if __name__ == "__main__":
    main()
