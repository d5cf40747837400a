#!/usr/bin/env python3
"""Host cost of the Python scopes per unit: what a module boundary and a per-operator
command add to eager PyTorch code, on the host backend (no GPU).

A stack of N small leaf modules (Linear 8x8 then ReLU, N/2 of each) runs forward (no
grad) and forward+backward, plainly, inside a module scope of that model (a boundary
command per leaf module and per module backward; its hooks stay on the model, so the
plain runs come first) and inside an operator scope (a command per operator), each
repeated; the median per pass, less the plain one, over the number of commands gives
microseconds per command.
On a host queue a command is a host-side done mark, so this is the library's and the
binding's CPU cost per unit, without any GPU stream operation (those add about 2-3 us
per command on CUDA: doc/RESULTS.md, "overhead").

Usage: XSCHED_LIBRARY=build/libxsched.so python3 benchmarks/python/scope_cost.py [--quick]
Prints one line per measurement; exits 77 without PyTorch.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bindings", "python"))
try:
    import torch
except ImportError:
    print("skipped: PyTorch cannot be imported by %s" % sys.executable)
    sys.exit(77)
import xsched  # noqa: E402

QUICK = "--quick" in sys.argv
N = 64                      # leaf modules
REPS = 5 if QUICK else 30   # passes per measurement


def model():
    layers = []
    for _ in range(N // 2):
        layers += [torch.nn.Linear(8, 8), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def timed(fn):
    fn()  # warm
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    torch.set_num_threads(1)
    net, x = model(), torch.randn(4, 8)
    q = xsched.HostQueue()
    xq = xsched.XQueue(q, level=xsched.PreemptLevel.DEACTIVATE)

    def fwd():
        with torch.no_grad():
            net(x)

    def fwd_bwd():
        net(x).sum().backward()

    def in_scope(body, **kw):
        def run():
            with xq.running(**kw):
                body()
            xq.wait_all()
        return run

    def plain(body):
        def run():
            body()
            xq.wait_all()
        return run

    print("scope cost on the host backend: torch %s, %d leaf modules, %d passes (median)"
          % (torch.__version__, N, REPS))
    for name, body in (("forward", fwd), ("forward+backward", fwd_bwd)):
        base = timed(plain(body))
        before = xq.stats().submitted
        mod = timed(in_scope(body, per_module=net))
        per_pass_mod = (xq.stats().submitted - before) / (REPS + 1)
        before = xq.stats().submitted
        op = timed(in_scope(body))
        per_pass_op = (xq.stats().submitted - before) / (REPS + 1)
        print("%-17s plain %8.1f us/pass" % (name, base * 1e6))
        print("%-17s module scope %8.1f us/pass, %4.0f commands, %5.2f us per command"
              % (name, mod * 1e6, per_pass_mod, (mod - base) * 1e6 / per_pass_mod))
        print("%-17s operator scope %6.1f us/pass, %4.0f commands, %5.2f us per command"
              % (name, op * 1e6, per_pass_op, (op - base) * 1e6 / per_pass_op))
    xq.close()
    q.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
