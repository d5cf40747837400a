"""Tests of XQueue.launch_inline and operator scopes (XQueue.running) on the host backend.

No GPU needed. The operator tests need PyTorch (any build: on a host queue, CPU operators
are the commands) and are skipped, saying so, when it cannot be imported. Run alone
(``python3 tests/python/test_scope.py``) or with pytest.
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "bindings", "python")))
sys.path.insert(0, HERE)

import xsched  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # the operator tests say they were skipped
    torch = None


def _queue(**kw):
    q = xsched.HostQueue()
    return q, xsched.XQueue(q, **kw)


def _close(*objs):
    for o in objs:
        o.close()


def _expect(exc_type, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        return e
    raise AssertionError("%s did not raise %s" % (fn, exc_type.__name__))


def _wait_until(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.001)
    return True


def _python_runs_meanwhile(seconds=0.2):
    """Whether this thread keeps running Python for @seconds while another is blocked in
    C (it could not if that one held the GIL)."""
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        n += 1
    return n > 1000


def _run_while_suspended(xq, work):
    """Run @work on a thread while @xq is suspended: the thread must block (with the GIL
    released, and nothing returned) until the resume. Returns what @work returned."""
    xq.suspend()
    out, done = [], threading.Event()

    def worker():
        out.append(work())
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    assert _python_runs_meanwhile() and not done.is_set() and not out
    xq.resume()
    assert done.wait(10)
    t.join()
    return out[0]


def _skip_without_torch(name):
    if torch is None:
        print("skip %s: PyTorch cannot be imported by %s" % (name, sys.executable))
        return True
    return False


# ---------------------------------------------------------------------------------------
# launch_inline
# ---------------------------------------------------------------------------------------

def test_launch_inline_runs_here_in_order_and_returns():
    q, xq = _queue(level=xsched.PreemptLevel.DEACTIVATE)
    log, me = [], threading.get_ident()

    def inline(i):
        assert threading.get_ident() == me
        log.append(("inline", i))
        return i * 10

    for i in range(50):
        xq.submit_host_func(log.append, ("host", i))
        assert xq.launch_inline(inline, i) == i * 10
    xq.wait_all()
    assert [e for e in log if e[0] == "inline"] == [("inline", i) for i in range(50)]
    assert [e for e in log if e[0] == "host"] == [("host", i) for i in range(50)]
    st = xq.stats()
    assert st.submitted == 100 and st.completed == 100 and st.failed == 0
    _close(xq, q)


def test_launch_inline_exception_is_reraised_and_queue_usable():
    q, xq = _queue()

    def bad():
        raise KeyError("boom")

    e = _expect(KeyError, xq.launch_inline, bad)
    assert "boom" in str(e)
    assert xq.launch_inline(lambda: 7) == 7
    xq.wait_all()  # the failed call's command completed without an error of its own
    assert xq.stats().failed == 0
    _close(xq, q)


def test_launch_inline_from_own_callback_is_refused():
    q, xq = _queue()
    seen = []

    def host():
        try:
            xq.launch_inline(lambda: None)
        except xsched.NotAllowedError as e:
            seen.append(e)

    xq.submit_host_func(host)
    xq.wait_all()
    assert len(seen) == 1
    _close(xq, q)
    _expect(xsched.XSchedError, xq.launch_inline, lambda: None)  # closed


def test_blocked_launch_releases_the_gil():
    q, xq = _queue()
    xq.suspend()
    ran, done = threading.Event(), threading.Event()

    def worker():
        xq.launch_inline(ran.set)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    # The worker blocks in C; this thread keeps running Python meanwhile.
    assert _python_runs_meanwhile() and not ran.is_set() and not done.is_set()
    assert xq.stats().pending == 1
    xq.resume()
    assert done.wait(10) and ran.is_set()
    t.join()
    xq.wait_all()
    _close(xq, q)


# ---------------------------------------------------------------------------------------
# scopes without operators
# ---------------------------------------------------------------------------------------

def test_scope_holds_lower_priority_queue():
    # A co-run budget of 0: HPF then suspends the low queue while the scope is open.
    xsched.set_corun_budget(0)
    xsched.set_scheduler(xsched.Scheduler.LOCAL, xsched.Policy.HPF)
    qh, high = _queue(level=xsched.PreemptLevel.DEACTIVATE, priority=10)
    ql, low = _queue(level=xsched.PreemptLevel.DEACTIVATE, priority=1)
    ran = threading.Event()
    with high.running():
        with high.running():  # re-entrant
            assert _wait_until(lambda: low.stats().suspensions > 0)
            low.submit_host_func(ran.set)
            time.sleep(0.05)
            assert not ran.is_set()
        time.sleep(0.05)
        assert not ran.is_set()  # the outer scope is still open
    assert ran.wait(10)
    low.wait_all()
    _close(high, low, qh, ql)


def test_scope_exit_with_work_in_flight():
    q, xq = _queue(level=xsched.PreemptLevel.DEACTIVATE, threshold=64)
    gate = threading.Event()
    xq.submit_host_func(gate.wait)
    with xq.running(per_operator=False):
        for _ in range(10):
            xq.launch_inline(lambda: None)
    st = xq.stats()
    assert st.completed == 0 and st.in_flight >= 11  # the scope left them running
    gate.set()
    xq.wait_all()
    st = xq.stats()
    assert st.completed == st.submitted == 12  # 1 + 10 + the scope's closing mark
    _close(xq, q)


def test_scope_on_closed_queue_raises():
    q, xq = _queue()
    _close(xq, q)
    _expect(xsched.XSchedError, xq.running().__enter__)


# ---------------------------------------------------------------------------------------
# operators (PyTorch)
# ---------------------------------------------------------------------------------------

def test_operators_become_commands_on_this_thread():
    if _skip_without_torch("test_operators_become_commands_on_this_thread"):
        return
    q, xq = _queue(level=xsched.PreemptLevel.DEACTIVATE)
    w = torch.randn(16, 16, requires_grad=True)
    x = torch.randn(8, 16)
    ref = torch.relu(x @ w).sum()
    ref.backward()
    gref = w.grad.clone()
    w.grad = None
    before = xq.stats().submitted
    with xq.running():
        loss = torch.relu(x @ w).sum()
        loss.backward()
        y = x.view(-1)  # a view: no command
    n = xq.stats().submitted - before
    xq.wait_all()
    assert torch.allclose(loss, ref) and torch.allclose(w.grad, gref)
    assert y.shape == (128,)
    assert n >= 5, n  # mm, relu, sum, and the backward operators
    # Outside the scope operators are not commands any more.
    before = xq.stats().submitted
    torch.relu(x @ w)
    assert xq.stats().submitted == before
    _close(xq, q)


def test_operator_exception_leaves_scope_cleanly():
    if _skip_without_torch("test_operator_exception_leaves_scope_cleanly"):
        return
    q, xq = _queue()
    a, b = torch.randn(3, 4), torch.randn(5, 6)
    try:
        with xq.running():
            torch.mm(a, b)
    except RuntimeError:
        pass
    else:
        raise AssertionError("mm of mismatched shapes did not raise")
    before = xq.stats().submitted
    torch.mm(a, a.t())  # the mode is gone
    assert xq.stats().submitted == before
    with xq.running():
        torch.mm(a, a.t())
    assert xq.stats().submitted > before
    xq.wait_all()
    _close(xq, q)


def test_operators_block_while_suspended_and_release_gil():
    if _skip_without_torch("test_operators_block_while_suspended_and_release_gil"):
        return
    q, xq = _queue()
    x = torch.randn(32, 32)

    def work():
        with xq.running():
            return (x @ x).sum()

    assert torch.allclose(_run_while_suspended(xq, work), (x @ x).sum())
    xq.wait_all()
    _close(xq, q)


def test_two_threads_two_scopes_keep_their_queues():
    if _skip_without_torch("test_two_threads_two_scopes_keep_their_queues"):
        return
    qa, xa = _queue()
    qb, xb = _queue()
    x = torch.randn(8, 8)
    counts = {}
    barrier = threading.Barrier(2)

    def worker(name, xq, n):
        barrier.wait()
        before = xq.stats().submitted
        with xq.running():
            for _ in range(n):
                torch.add(x, 1)
        counts[name] = xq.stats().submitted - before

    ta = threading.Thread(target=worker, args=("a", xa, 100))
    tb = threading.Thread(target=worker, args=("b", xb, 37))
    ta.start(), tb.start()
    ta.join(), tb.join()
    assert counts == {"a": 100, "b": 37}, counts
    xa.wait_all(), xb.wait_all()
    _close(xa, xb, qa, qb)


def test_nested_scopes_innermost_wins():
    if _skip_without_torch("test_nested_scopes_innermost_wins"):
        return
    qa, xa = _queue()
    qb, xb = _queue()
    x = torch.randn(4, 4)
    with xa.running():
        torch.add(x, 1)
        a1 = xa.stats().submitted
        with xb.running():
            torch.add(x, 1)
            torch.add(x, 1)
        assert xa.stats().submitted == a1 and xb.stats().submitted == 2
        torch.add(x, 1)
    assert xa.stats().submitted == a1 + 1
    xa.wait_all(), xb.wait_all()
    _close(xa, xb, qa, qb)


# ---------------------------------------------------------------------------------------
# module scopes (per_module=True)
# ---------------------------------------------------------------------------------------

def _mlp():
    # Leaf modules: Linear, ReLU, Linear (the Sequential is a container: not counted).
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def test_module_boundaries_forward_backward_and_exit():
    if _skip_without_torch("test_module_boundaries_forward_backward_and_exit"):
        return
    q, xq = _queue(level=xsched.PreemptLevel.DEACTIVATE)
    net, x = _mlp(), torch.randn(8, 16)
    ref = net(x).sum()
    ref.backward()
    gref = net[0].weight.grad.clone()
    net.zero_grad(set_to_none=True)
    before = xq.stats().submitted
    with xq.running(per_module=True):
        loss = net(x).sum()
        fwd = xq.stats().submitted - before
        loss.backward()
        bwd = xq.stats().submitted - before - fwd
    total = xq.stats().submitted - before
    xq.wait_all()
    assert torch.allclose(loss, ref) and torch.allclose(net[0].weight.grad, gref)
    assert fwd == 3, fwd   # one boundary per leaf module
    assert bwd == 3, bwd   # one before each leaf module's backward
    assert total == 7, total  # and the done mark at exit
    # Outside the scope, modules add nothing; without grad there is no backward hook.
    before = xq.stats().submitted
    net(x)
    assert xq.stats().submitted == before
    with torch.no_grad(), xq.running(per_module=True, ops_per_command=2):
        net(x)
    assert xq.stats().submitted - before == 3, xq.stats().submitted - before  # 2 + exit
    xq.wait_all()
    _close(xq, q)


def test_module_scope_blocks_while_suspended_and_release_gil():
    if _skip_without_torch("test_module_scope_blocks_while_suspended_and_release_gil"):
        return
    q, xq = _queue()
    net, x = _mlp(), torch.randn(8, 16)

    def work():
        with torch.no_grad(), xq.running(per_module=True):
            return net(x)

    out = _run_while_suspended(xq, work)
    with torch.no_grad():
        assert torch.allclose(out, net(x))
    xq.wait_all()
    _close(xq, q)


def test_module_and_whole_scopes_inside_operator_scope():
    if _skip_without_torch("test_module_and_whole_scopes_inside_operator_scope"):
        return
    qa, xa = _queue()
    qb, xb = _queue()
    net, x = _mlp(), torch.randn(8, 16)
    with torch.no_grad(), xa.running():
        a0 = xa.stats().submitted
        with xb.running(per_module=True):
            net(x)
        # Inside the module scope the operators were not xa's commands.
        assert xa.stats().submitted == a0
        assert xb.stats().submitted == 4  # 3 modules + exit
        with xb.running(per_operator=False):  # a whole scope: one done mark at exit
            net(x)
        assert xa.stats().submitted == a0 and xb.stats().submitted == 5
    xa.wait_all(), xb.wait_all()
    _close(xa, xb, qa, qb)


def test_module_scope_of_one_model_and_global_hooks_removed():
    if _skip_without_torch("test_module_scope_of_one_model_and_global_hooks_removed"):
        return
    import torch.nn.modules.module as mm
    q, xq = _queue()
    net, other, x = _mlp(), _mlp(), torch.randn(8, 16)
    with torch.no_grad():
        before = xq.stats().submitted
        with xq.running(per_module=net):  # only net's leaves count
            net(x)
            other(x)
        assert xq.stats().submitted - before == 4, xq.stats().submitted - before
        # No process-wide hooks for a model's scope; those of a scope without one go
        # away with it.
        assert not mm._global_forward_pre_hooks and not mm._global_forward_hooks
        before = xq.stats().submitted
        with xq.running(per_module=True):
            assert mm._global_forward_pre_hooks
            net(x)    # hooked by its model: one boundary per leaf, not two
            other(x)  # through the process-wide hooks
        assert xq.stats().submitted - before == 7, xq.stats().submitted - before
        assert not mm._global_forward_pre_hooks and not mm._global_forward_hooks
    xq.wait_all()
    _close(xq, q)


if __name__ == "__main__":
    import _runner
    rc = _runner.run(globals(), "xsched operator scopes (host backend, torch %s)"
                     % (torch.__version__ if torch is not None else "absent"))
    xsched.shutdown()
    sys.exit(rc)
