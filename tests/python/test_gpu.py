"""Tests of the Python bindings on a GPU, through PyTorch streams.

Skipped (exit 77 when run alone) without PyTorch, a CUDA/ROCm device, or a libxsched
built with the matching backend. Run with pytest or alone, like test_bindings.py.
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "bindings", "python")))

import xsched  # noqa: E402

SKIP = None
try:
    import torch
except ImportError:
    SKIP = "PyTorch is not installed"
else:
    if not torch.cuda.is_available():
        SKIP = "no GPU visible to PyTorch"
    else:
        try:
            with xsched.XQueue(torch.cuda.Stream()):
                pass
        except xsched.NotSupportedError as e:
            SKIP = "libxsched has no backend for this GPU (%s)" % e

if SKIP and "pytest" in sys.modules:
    import pytest
    pytest.skip(SKIP, allow_module_level=True)


def _expect(exc_type, fn, *args):
    try:
        fn(*args)
    except exc_type as e:
        return e
    raise AssertionError("did not raise %s" % exc_type.__name__)


class _Hook:
    def __enter__(self):
        self.calls, self.old = [], sys.unraisablehook
        sys.unraisablehook = self.calls.append
        return self

    def __exit__(self, *exc):
        sys.unraisablehook = self.old


def test_levels_and_stream_handle():
    s = torch.cuda.Stream()
    with xsched.XQueue(s, level="max") as xq:
        assert xq.hwq.handle == s.cuda_stream  # a GPU HwQueue handle is the stream
        assert xq.preempt_level == xq.hwq.max_preempt_level >= xsched.PreemptLevel.BLOCK
        got = xq.submit(xsched.Command.launch_callback(lambda h: h, pass_hwq=True)).wait()
        assert got == s.cuda_stream
    _expect(xsched.InvalidValueError, xsched.CudaQueue if not torch.version.hip
            else xsched.HipQueue, 0)


def test_callable_runs_on_the_stream_and_completes():
    s = torch.cuda.Stream()
    a = torch.randn(2048, 2048, device="cuda")
    ref = a @ a
    torch.cuda.synchronize()
    with xsched.XQueue(s, level="max") as xq:
        seen = []

        def work():
            seen.append(torch.cuda.current_stream().cuda_stream)
            return a @ a

        y = xq.submit_callable(work).wait()  # completion covers the callable's kernels
        assert seen == [s.cuda_stream]
        assert torch.allclose(y, ref)


def test_order_and_submit_and_forget():
    s = torch.cuda.Stream()
    x = torch.zeros(1, device="cuda")
    with xsched.XQueue(s, level="max") as xq:
        for _ in range(300):
            xq.submit_callable(x.add_, 1)  # dropped at once
        xq.wait_all()
        s.synchronize()
        assert x.item() == 300
        st = xq.stats()
        assert st.completed == 300 and st.failed == 0


def test_threads_and_host_function():
    sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
    xa, xb = torch.zeros(1, device="cuda"), torch.zeros(1, device="cuda")
    with xsched.XQueue(sa) as qa, xsched.XQueue(sb) as qb:
        def producer(xq, x):
            for _ in range(20):
                xq.submit_callable(x.mul_, 2)
                xq.submit_callable(x.add_, 1)
        ths = [threading.Thread(target=producer, args=(qa, xa)),
               threading.Thread(target=producer, args=(qb, xb))]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        # A host function runs once the stream reached it (and must not call CUDA).
        assert qa.submit_host_func(lambda: "host").wait() == "host"
        qb.wait_all()
        torch.cuda.synchronize()
        assert xa.item() == xb.item() == float(2 ** 20 - 1)  # each queue kept its order


def test_exception_in_gpu_callback():
    s = torch.cuda.Stream()
    with xsched.XQueue(s) as xq, _Hook() as hook:
        def bad():
            raise RuntimeError("bad forward")
        c = xq.submit_callable(bad)
        e = _expect(RuntimeError, c.wait)
        assert "bad forward" in str(e) and len(hook.calls) == 1
        x = torch.ones(4, device="cuda")
        assert xq.submit_callable(lambda: x * 2).wait().sum().item() == 8
        _expect(RuntimeError, xq.wait_all)


def test_suspend_holds_commands():
    s = torch.cuda.Stream()
    x = torch.zeros(1, device="cuda")
    with xsched.XQueue(s) as xq:
        with xq.suspended():
            cmds = [xq.submit_callable(x.add_, 1) for _ in range(10)]
            time.sleep(0.05)
            assert not any(c.ran for c in cmds)
            assert xq.stats().pending == 10
        xq.wait_all()
        s.synchronize()
        assert x.item() == 10


def test_copy_and_fill_commands():
    if not (xsched.has_function("HwCommandCreateMemcpy")
            and xsched.has_function("HwCommandCreateMemset")):
        return
    s = torch.cuda.Stream()
    a = torch.zeros(1 << 20, dtype=torch.uint8, device="cuda")
    b = torch.zeros_like(a)
    with xsched.XQueue(s) as xq:
        xq.submit(xsched.Command.memset(a, 7, a.numel()))
        c = xq.submit(xsched.Command.memcpy(b, a, a.numel()))
        c.wait()
        assert int(b.sum().item()) == 7 * a.numel()


def test_operator_scope_on_gpu():
    # Each operator is one command on the XQueue's stream; results as without the scope;
    # backward (autograd's device thread) goes through the XQueue too.
    s = torch.cuda.Stream()
    with xsched.XQueue(s, level="max") as xq:
        w = torch.randn(64, 64, device="cuda", requires_grad=True)
        x = torch.randn(32, 64, device="cuda")
        ref = torch.relu(x @ w).sum()
        ref.backward()
        gref = w.grad.clone()
        w.grad = None
        seen = []
        orig = xq.launch_inline

        def counting(fn, *a, **k):
            seen.append((threading.get_ident(), torch.cuda.current_stream().cuda_stream))
            return orig(fn, *a, **k)

        xq.launch_inline = counting
        with xq.running():
            assert torch.cuda.current_stream().cuda_stream == s.cuda_stream
            loss = torch.relu(x @ w).sum()
            loss.backward()
        s.synchronize()
        assert torch.allclose(loss, ref) and torch.allclose(w.grad, gref, atol=1e-4)
        assert len(seen) >= 5 and all(st == s.cuda_stream for _, st in seen), seen
        xq.wait_all()
        st = xq.stats()
        assert st.completed == st.submitted >= len(seen)


def test_operator_scope_suspended_queue_blocks_thread():
    s = torch.cuda.Stream()
    with xsched.XQueue(s, level="max") as xq:
        x = torch.randn(256, 256, device="cuda")
        xq.suspend()
        done = threading.Event()
        out = []

        def worker():
            with xq.running():
                out.append((x @ x).sum())
            done.set()

        t = threading.Thread(target=worker)
        t.start()
        time.sleep(0.1)
        assert not done.is_set() and xq.stats().pending == 1
        xq.resume()
        assert done.wait(30)
        t.join()
        torch.cuda.synchronize()
        assert torch.allclose(out[0], (x @ x).sum(), rtol=1e-3)


def test_module_scope_on_gpu():
    # A boundary before each leaf module and before its backward, on the XQueue's stream;
    # results as without the scope; a suspension holds the stream's later work.
    s = torch.cuda.Stream()
    net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 8)).cuda()
    x = torch.randn(32, 64, device="cuda")
    ref = net(x).sum()
    ref.backward()
    gref = net[0].weight.grad.clone()
    net.zero_grad(set_to_none=True)
    with xsched.XQueue(s, level="max") as xq:
        before = xq.stats().submitted
        with xq.running(per_module=True):
            assert torch.cuda.current_stream().cuda_stream == s.cuda_stream
            loss = net(x).sum()
            loss.backward()
        s.synchronize()
        assert torch.allclose(loss, ref, rtol=1e-4)
        assert torch.allclose(net[0].weight.grad, gref, atol=1e-4)
        assert xq.stats().submitted - before == 7  # 3 forward, 3 backward, exit
        # Suspended: the thread blocks at the first module, GIL released.
        xq.suspend()
        done, out = threading.Event(), []

        def worker():
            with torch.no_grad(), xq.running(per_module=True):
                out.append(net(x))
            done.set()

        t = threading.Thread(target=worker)
        t.start()
        time.sleep(0.1)
        assert not done.is_set() and not out and xq.stats().pending == 1
        xq.resume()
        assert done.wait(30)
        t.join()
        xq.wait_all()
        torch.cuda.synchronize()
        with torch.no_grad():
            assert torch.allclose(out[0], net(x), rtol=1e-4)


def test_graph_with_gate_checks_stops_while_suspended():
    s = torch.cuda.Stream()
    with xsched.XQueue(s, level="max") as xq:
        if xq.preempt_level < xsched.PreemptLevel.DEACTIVATE:
            print("  (skipped: the stream has no Lv2, no run gate)")
            return
        x = torch.zeros(1, device="cuda")
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s, capture_error_mode="thread_local"), \
                xq.gate_checks():
            for _ in range(100):
                x.add_(1)
        torch.cuda.synchronize()
        x.zero_()
        torch.cuda.synchronize()
        xq.suspend()
        with torch.cuda.stream(s):
            g.replay()  # outside any command: only the captured checks hold it
        time.sleep(0.1)
        assert not s.query(), "the replay ran while its XQueue was suspended"
        xq.resume()
        s.synchronize()
        assert int(x.item()) == 100
        xq.resume()
        # Running: a replay inside a command goes through.
        xq.submit_callable(g.replay).wait()
        s.synchronize()
        assert int(x.item()) == 200


def test_capture_at_the_library_priority():
    # XQueue.capture(): the graph is captured once the library set the stream's hardware
    # priority (the top queue: the greatest), and replays on the stream.
    s = torch.cuda.Stream()
    x = torch.ones(1024, device="cuda")
    with xsched.XQueue(s, level="max", priority=2) as xq:
        g = torch.cuda.CUDAGraph()
        with xq.capture(g):
            y = x * 2
        assert xq.stats().hw_priority == 2, xq.stats()
        with torch.cuda.stream(s):
            g.replay()
        s.synchronize()
        assert float(y.sum()) == 2048.0


def _main():
    if SKIP:
        print("skipped: " + SKIP)
        return 77
    import _runner
    return _runner.run(globals(), "xsched GPU bindings on %s, library %s"
                       % (torch.cuda.get_device_name(), xsched.library_path))


if __name__ == "__main__":
    sys.exit(_main())
