"""The timeline trace through the Python bindings, on the host backend (no GPU).

A traced run with two XQueues under HPF must give JSON that parses, a named track per
XQueue, exactly one completion per commit (after it), timestamps in order per track, and
the scheduler's suspensions; a small ring (XSCHED_TRACE_EVENTS) must count what it
dropped. Run alone or with pytest.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
BINDINGS = os.path.abspath(os.path.join(HERE, "..", "..", "bindings", "python"))
sys.path.insert(0, BINDINGS)
sys.path.insert(0, HERE)

import xsched  # noqa: E402


def _run_two_queues():
    # A co-run budget of 0: HPF then suspends the low queue, and the trace shows it (the
    # high commands take 20 ms each, so a loaded machine's scheduler pass still comes
    # while they run).
    xsched.set_corun_budget(0)
    xsched.set_scheduler(xsched.Scheduler.LOCAL, xsched.Policy.HPF)
    qh, ql = xsched.HostQueue(), xsched.HostQueue()
    high = xsched.XQueue(qh, level=xsched.PreemptLevel.DEACTIVATE, priority=10)
    low = xsched.XQueue(ql, level=xsched.PreemptLevel.DEACTIVATE, priority=1)
    gate = threading.Event()
    for _ in range(50):
        low.submit_host_func(lambda: gate.wait(0.002))
    for _ in range(10):
        high.submit_host_func(lambda: gate.wait(0.02))
    high.wait_all()
    low.wait_all()
    handles = (high.handle, low.handle)
    for o in (high, low, qh, ql):
        o.close()
    return handles


def _check_trace(doc, handles):
    ev = doc["traceEvents"]
    named = [(e["tid"], e["args"]["name"]) for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"]
    names = dict(named)
    assert len(names) == len(named), named  # one name per track
    for h in handles:
        tid = h & 0xFFFFFFFF
        assert tid in names and "prio" in names[tid], names
    assert "prio 10 " in names[handles[0] & 0xFFFFFFFF], names  # the last priority
    begins, ends = collections.Counter(), collections.Counter()
    b_ts = {}
    last = {}
    for e in ev:
        if "ts" not in e:
            continue
        key = e["tid"]
        assert e["ts"] >= last.get(key, float("-inf")), "time goes back on track %s" % key
        last[key] = e["ts"]
        if e["ph"] == "b":
            begins[e["id"]] += 1
            b_ts[e["id"]] = e["ts"]
        elif e["ph"] == "e":
            ends[e["id"]] += 1
            assert e["id"] in b_ts and e["ts"] >= b_ts[e["id"]], e
    assert begins and begins == ends, "commits without one completion each"
    assert all(n == 1 for n in begins.values())
    kinds = collections.Counter(e["name"] for e in ev if e.get("ph") == "i")
    assert kinds["submit"] == 60, kinds
    assert kinds["suspend"] >= 1 and kinds["pass"] >= 1, kinds
    return len(begins)


def test_traced_run_is_valid_trace_event_json():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        with xsched.trace(path):
            handles = _run_two_queues()
        with open(path) as f:
            doc = json.load(f)
    assert doc["otherData"]["dropped"] == 0
    assert _check_trace(doc, handles) == 60


def test_trace_twice_is_refused():
    with tempfile.TemporaryDirectory() as d:
        with xsched.trace(os.path.join(d, "a.json")):
            try:
                xsched.trace(os.path.join(d, "b.json")).__enter__()
            except xsched.NotAllowedError:
                pass
            else:
                raise AssertionError("a second trace was started")


CHILD = r"""
import sys, threading
sys.path.insert(0, %r)
import xsched
q = xsched.HostQueue()
xq = xsched.XQueue(q)
for _ in range(200):
    xq.submit_host_func(lambda: None)
xq.wait_all()
xq.close(); q.close()
"""


def test_environment_trace_with_small_rings_counts_drops():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "env.json")
        env = dict(os.environ, XSCHED_TRACE=path, XSCHED_TRACE_EVENTS="16")
        subprocess.run([sys.executable, "-c", CHILD % BINDINGS], env=env, check=True,
                       timeout=120)
        with open(path) as f:
            doc = json.load(f)  # written at exit
    kept, dropped = doc["otherData"]["events"], doc["otherData"]["dropped"]
    # Per command one submit, enqueue, commit and completion: 800, plus the XQueue's
    # track and the scheduler's passes (how many depends on the machine's timing: 119
    # on a 16-core host); each of the few recording threads keeps 16.
    assert 800 <= kept + dropped <= 1200, doc["otherData"]
    assert kept <= 16 * 6 and dropped >= 800 - kept, doc["otherData"]
    assert kept == sum(1 for e in doc["traceEvents"]
                       if e.get("name") != "process_name"), "file and count disagree"

if __name__ == "__main__":
    import _runner
    rc = _runner.run(globals(), "xsched trace (host backend)")
    xsched.shutdown()
    sys.exit(rc)
