#!/usr/bin/env python3
"""Two models on one GPU in one process, eager PyTorch: a latency-critical model serving
requests at a fixed rate and a best-effort training loop, each in its own thread on its
own torch.cuda.Stream.

Pairs (--pair):
  resnet       high: ResNet-18 inference, batch 1, --rate req/s (default 20)
  transformer  high: a BERT-base-sized encoder written in torch.nn (12 layers, d 768,
               12 heads, FF 3072), batch 1, sequence 128, --rate req/s (default 40)
  both pairs   low: ResNet-50 training (forward, backward, SGD step), batch --low-batch
               (default 64), back to back; throughput in steps/s

Modes (each run for --duration seconds after --warmup seconds):
  alone          the high model only, no library
  low-alone      the low model only, no library
  scope-alone    the high model only, inside its XQueue's scope in the form the xsched
                 modes use (one command per request, or per unit with --high-per-op):
                 the scope's overhead
  low-scope-alone the low model only, inside its scope (per unit, as in xsched modes)
  native         both models, equal streams, no library
  native-prio    both, the high model's stream of high hardware priority
  xsched         both through XQueues with HPF (high priority 1, low 0)
  xsched-prio    as xsched, the high stream also created with high hardware priority

How the xsched modes run the models (--form):
  scope     (default) eager code inside ``with xq.running(...)`` on the model's own
            thread; the low loop's units (--unit: leaf modules by default, or operators)
            are commands, so a suspension stops its stream at the next unit; the high
            model's scope holds the low queue for the whole request and is one command
            (--high-per-op makes its units commands too)
  callback  each request, and each of forward/backward/step of the low loop, is one
            launch callback (xq.submit_callable), the form of libxsched 0.2
--objective G gives the high XQueue a latency objective (XHintLatencyObjective): the
library sizes the co-run budget of the low queue to keep the high requests' slowdown over
alone within G, with as much training as that allows.
--graphs replays the high model as a CUDA graph (captured with xq.gate_checks(), so that a
replay stops at the next operator while its XQueue is suspended) in every mode.

Random weights, random data: nothing is downloaded. Needs PyTorch, torchvision, a CUDA or
ROCm GPU and libxsched built with its CUDA or HIP backend (XSCHED_LIBRARY=...).

  python3 examples/python/two_models.py --pair transformer --duration 20 --json out.json
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bindings", "python"))
# A lazily loaded kernel's first launch waits for every stream, also one stopped at a
# suspended XQueue's gate: load every kernel when CUDA starts (doc/python.md).
os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

MODES = ("alone", "low-alone", "scope-alone", "low-scope-alone", "native", "native-prio",
         "xsched", "xsched-prio")
RATES = {"resnet": 20.0, "transformer": 40.0}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pair", default="transformer", choices=sorted(RATES))
    p.add_argument("--modes", default="alone,low-alone,scope-alone,low-scope-alone,native,"
                   "native-prio,xsched", help="comma-separated, from: " + ", ".join(MODES))
    p.add_argument("--form", default="scope", choices=("scope", "callback"))
    p.add_argument("--unit", default="module", choices=("module", "operator"),
                   help="scope form: what becomes a command: each leaf torch.nn module "
                        "(a boundary before it and before its backward; cheap) or each "
                        "operator (a TorchDispatchMode; finer, costlier)")
    p.add_argument("--ops-per-command", type=int, default=1,
                   help="scope form: units (modules or operators) per command (a "
                        "suspension stops the stream within this many)")
    p.add_argument("--high-per-op", action="store_true",
                   help="xsched and scope-alone modes: the high model's units (--unit) "
                        "are commands too (default: its scope is one command)")
    p.add_argument("--graphs", action="store_true", help="high model as a CUDA graph")
    p.add_argument("--objective", type=float, default=0.0,
                   help="latency objective of the high XQueue in the xsched modes: the "
                        "slowdown over alone its requests may suffer (e.g. 1.3; 0: none, "
                        "the library's fixed co-run budget)")
    p.add_argument("--duration", type=float, default=20.0, help="seconds measured per mode")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    p.add_argument("--rate", type=float, default=0.0, help="high requests/s (0: pair's)")
    p.add_argument("--low-batch", type=int, default=64)
    p.add_argument("--level", default="max", help="XQueue preemption level: 1, 2 or max")
    p.add_argument("--low-threshold", type=int, default=64,
                   help="low XQueue window: operators enqueued ahead of the GPU")
    p.add_argument("--switch-interval", type=float, default=0.001,
                   help="sys.setswitchinterval (s), the same in every mode")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="also write the results as JSON (to PATH, or stdout)")
    a = p.parse_args()
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in a.modes:
        if m not in MODES:
            p.error("unknown mode %r" % m)
    a.rate = a.rate or RATES[a.pair]
    return a


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def high_model(torch, pair, dev):
    """The high model and one request's input."""
    nn = torch.nn
    if pair == "resnet":
        import torchvision
        net = torchvision.models.resnet18(weights=None).to(dev).eval()
        return net, torch.randn(1, 3, 224, 224, device=dev)
    layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True)
    net = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).to(dev).eval()
    return net, torch.randn(1, 128, 768, device=dev)


class HighRunner:
    """Runs one request on the current stream: eager, or a graph replay."""

    def __init__(self, torch, net, x, graphs, xq_for_capture=None, stream=None):
        self.torch, self.net, self.x, self.graph = torch, net, x, None
        with torch.inference_mode():
            for _ in range(3):
                net(x)
        torch.cuda.synchronize()
        if graphs:
            self.graph = torch.cuda.CUDAGraph()
            s = stream or torch.cuda.Stream()
            with torch.inference_mode():
                if xq_for_capture is not None:
                    with torch.cuda.graph(self.graph, stream=s,
                                          capture_error_mode="thread_local"), \
                            xq_for_capture.gate_checks():
                        self.out = net(x)
                else:
                    with torch.cuda.graph(self.graph, stream=s):
                        self.out = net(x)
            torch.cuda.synchronize()

    def __call__(self):
        if self.graph is not None:
            self.graph.replay()
            return
        with self.torch.inference_mode():
            self.out = self.net(self.x)


class LowTrainer:
    """ResNet-50 training, one step = forward, loss, backward, SGD step."""

    def __init__(self, torch, batch, dev):
        import torchvision
        self.torch = torch
        self.net = torchvision.models.resnet50(weights=None).to(dev).train()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=1e-3, momentum=0.9)
        self.x = torch.randn(batch, 3, 224, 224, device=dev)
        self.y = torch.randint(0, 1000, (batch,), device=dev)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.loss = None

    def forward(self):
        self.opt.zero_grad(set_to_none=True)
        self.loss = self.loss_fn(self.net(self.x), self.y)

    def backward(self):
        self.loss.backward()

    def step(self):
        self.opt.step()

    def __call__(self):
        self.forward()
        self.backward()
        self.step()


class Run:
    """One mode: the two threads and their measurements."""

    def __init__(self, args, torch, dev, mode):
        self.args, self.torch, self.dev, self.mode = args, torch, dev, mode
        self.lat = []
        self.late = 0
        self.low_done = []
        self.stop = threading.Event()
        self.errors = []
        self.stats = {}
        self.xq_high = self.xq_low = None

    def setup(self):
        torch, m, a = self.torch, self.mode, self.args
        prio = m in ("native-prio", "xsched-prio")
        self.s_high = torch.cuda.Stream(priority=-1) if prio else torch.cuda.Stream()
        self.s_low = torch.cuda.Stream()
        uses_high = m not in ("low-alone", "low-scope-alone")
        uses_low = m not in ("alone", "scope-alone")
        if m.startswith("xsched") or m.endswith("scope-alone"):
            import xsched
            xsched.set_scheduler(xsched.Scheduler.LOCAL, xsched.Policy.HPF)
            level = "max" if a.level == "max" else int(a.level)
            if uses_high:
                obj = a.objective if m.startswith("xsched") else 0.0
                self.xq_high = xsched.XQueue(self.s_high, level=level, priority=1,
                                             objective=obj or None)
            if uses_low:
                self.xq_low = xsched.XQueue(self.s_low, level=level, priority=0,
                                            threshold=a.low_threshold)
            self.level = int((self.xq_low or self.xq_high).preempt_level)
        net, x = high_model(torch, a.pair, self.dev)
        self.high = HighRunner(torch, net, x, a.graphs, self.xq_high, self.s_high) \
            if uses_high else None
        self.low = LowTrainer(torch, a.low_batch, self.dev) if uses_low else None
        if self.low is not None:
            with torch.cuda.stream(self.s_low):
                for _ in range(2):
                    self.low()
            torch.cuda.synchronize()

    def teardown(self):
        for name, xq in (("high", self.xq_high), ("low", self.xq_low)):
            if xq is not None:
                self.stats[name] = xq.stats().as_dict()
                xq.close()

    # -- the two threads -------------------------------------------------------------
    def _request(self):
        torch, xq = self.torch, self.xq_high
        if xq is None:
            with torch.cuda.stream(self.s_high):
                self.high()
        elif self.args.form == "callback":
            xq.submit_callable(self.high).wait()
        else:
            with self._scope(xq, self.args.high_per_op, self.high.net):
                self.high()
        self.s_high.synchronize()

    def high_loop(self, t_measure, t_end):
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
            self._request()
            t1 = time.perf_counter()
            if t0 >= t_measure:
                self.lat.append((t1 - t0) * 1e3)
            t_next += period
            if t_next < t1 - period:  # far behind: do not burst to catch up
                t_next = t1

    def low_loop(self):
        torch, xq, low = self.torch, self.xq_low, self.low
        ev_prev = None
        while not self.stop.is_set():
            if xq is None:
                with torch.cuda.stream(self.s_low):
                    low()
            elif self.args.form == "callback":
                xq.submit_callable(low.forward)
                xq.submit_callable(low.backward)
                # The step's work is on the stream once its last callback ran: wait for
                # that command, not for an event recorded before the callbacks ran.
                ev = xq.submit_callable(low.step)
            else:
                with self._scope(xq, True, low.net):
                    low()
            if xq is None or self.args.form != "callback":
                ev = torch.cuda.Event()
                ev.record(self.s_low)
            if ev_prev is not None:  # at most two steps queued
                self._retire(ev_prev)
            ev_prev = ev
        if ev_prev is not None:
            self._retire(ev_prev)

    def _scope(self, xq, per_unit, net):
        """The scope of model @net: per --unit when @per_unit, else one command."""
        a = self.args
        return xq.running(per_operator=per_unit and a.unit == "operator",
                          per_module=net if per_unit and a.unit == "module" else False,
                          ops_per_command=a.ops_per_command)

    def _retire(self, ev):
        if hasattr(ev, "synchronize"):
            ev.synchronize()
        else:  # an xsched.Command
            ev.wait()
            ev.close()
            self.s_low.synchronize()
        self.low_done.append(time.perf_counter())

    def _guard(self, fn, *a):
        try:
            fn(*a)
        except BaseException as e:
            self.errors.append(e)
            self.stop.set()
            raise

    def execute(self):
        a = self.args
        try:
            self.setup()
            t_measure = time.perf_counter() + a.warmup
            t_end = t_measure + a.duration
            threads = []
            if self.high is not None:
                threads.append(threading.Thread(target=self._guard, name="high",
                                                args=(self.high_loop, t_measure, t_end)))
            if self.low is not None:
                threads.append(threading.Thread(target=self._guard, name="low",
                                                args=(self.low_loop,)))
            for t in threads:
                t.start()
            if self.high is None:
                time.sleep(max(0.0, t_end - time.perf_counter()))
            else:
                threads[0].join()
            self.stop.set()
            for t in threads:
                t.join()
            self.torch.cuda.synchronize()
        finally:
            self.teardown()
        if self.errors:
            raise self.errors[0]
        steps = sum(1 for t in self.low_done if t_measure <= t <= t_end)
        res = {
            "high_requests": len(self.lat),
            "high_p50_ms": percentile(self.lat, 50) if self.lat else None,
            "high_p99_ms": percentile(self.lat, 99) if self.lat else None,
            "high_mean_ms": statistics.fmean(self.lat) if self.lat else None,
            "high_max_ms": max(self.lat) if self.lat else None,
            "high_late": self.late,
            "low_steps_per_s": steps / a.duration if self.low is not None else None,
        }
        if self.stats:
            res["preempt_level"] = self.level
            res["xqueue_stats"] = self.stats
        return res


def verdicts(results):
    """The targets of the operator-scope work, MET/MISSED, where the modes ran. A mode
    that completed no request or step (a hang, say) misses the targets it enters."""
    out = []
    ok = lambda m: m in results and "error" not in results[m]  # noqa: E731

    def ratio(a, ka, b, kb):
        x, y = results[a].get(ka), results[b].get(kb)
        return x / y if x and y else None

    def add(what, v, fmt, met):
        out.append((what, fmt % v if v is not None else "not measured (nothing completed)",
                    v is not None and met(v)))

    if ok("alone") and ok("xsched") and ok("native"):
        p99 = ratio("xsched", "high_p99_ms", "alone", "high_p99_ms")
        thr = ratio("xsched", "low_steps_per_s", "native", "low_steps_per_s")
        both = (p99, thr) if p99 is not None and thr is not None else None
        add("high p99 <= 1.05x alone and low >= 0.95 of native", both,
            "%.2fx alone, low %.3f of native", lambda v: v[0] <= 1.05 and v[1] >= 0.95)
    if ok("alone") and ok("scope-alone"):
        v = ratio("scope-alone", "high_p50_ms", "alone", "high_p50_ms")
        add("scope overhead, high model alone (p50), <= 3%",
            None if v is None else 100 * (v - 1), "%+.1f%%", lambda x: x <= 3)
    if ok("low-alone") and ok("low-scope-alone"):
        v = ratio("low-alone", "low_steps_per_s", "low-scope-alone", "low_steps_per_s")
        add("scope overhead, low model alone (step time), <= 3%",
            None if v is None else 100 * (v - 1), "%+.1f%%", lambda x: x <= 3)
    return out


def main():
    args = parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("two_models.py needs a CUDA or ROCm GPU")
    sys.setswitchinterval(args.switch_interval)
    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    torch.backends.cudnn.benchmark = True
    info = {
        "device": torch.cuda.get_device_name(args.device),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "config": {k: v for k, v in vars(args).items() if k != "json"},
    }
    print("# %s, torch %s, pair %s, form %s (unit %s, %d per command, high per unit: %s), "
          "graphs=%s, high %.0f req/s, low batch %d, %.0f s per mode"
          % (info["device"], info["torch"], args.pair, args.form, args.unit,
             args.ops_per_command, args.high_per_op, args.graphs, args.rate,
             args.low_batch, args.duration), flush=True)
    results = {}
    for mode in args.modes:
        print("running %-16s ..." % mode, end=" ", flush=True)
        try:
            r = results[mode] = Run(args, torch, dev, mode).execute()
            print("high p50 %s p99 %s ms, low %s steps/s" % (
                _f(r["high_p50_ms"]), _f(r["high_p99_ms"]), _f(r["low_steps_per_s"])),
                flush=True)
        except Exception as e:  # e.g. no CUDA backend in this libxsched
            results[mode] = {"error": "%s: %s" % (type(e).__name__, e)}
            print("skipped (%s: %s)" % (type(e).__name__, e), flush=True)
        torch.cuda.synchronize()

    print()
    print("%-16s %9s %9s %9s %6s %11s" % ("mode", "p50 ms", "p99 ms", "max ms", "reqs",
                                          "low step/s"))
    for mode in args.modes:
        r = results[mode]
        if "error" in r:
            print("%-16s %s" % (mode, r["error"]))
            continue
        label = mode + (" (ref)" if not (mode.startswith("xsched") or "scope" in mode)
                        else "")
        print("%-16s %9s %9s %9s %6d %11s" % (
            label, _f(r["high_p50_ms"]), _f(r["high_p99_ms"]), _f(r["high_max_ms"]),
            r["high_requests"], _f(r["low_steps_per_s"])))
    v = verdicts(results)
    if v:
        print()
        for what, fig, met in v:
            print("%-7s %s: %s" % ("MET" if met else "MISSED", what, fig))
    if args.json:
        doc = dict(info, results=results,
                   targets=[{"target": w, "figure": f, "met": m} for w, f, m in v])
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
