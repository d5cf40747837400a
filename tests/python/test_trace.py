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


def test_trace_started_later_names_the_tracks():
    """A trace started after the XQueues were made (as a server traces a window of its
    run) names their tracks with their last priority: the names are kept while the
    XQueues live, not only as events in the rings."""
    qa, qb = xsched.HostQueue(), xsched.HostQueue()
    xa = xsched.XQueue(qa, priority=7)
    xb = xsched.XQueue(qb)
    xb.priority = 3
    gone = xsched.XQueue(xsched.HostQueue())
    gone_handle = gone.handle
    gone.close()  # destroyed before the trace: no track
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "later.json")
        with xsched.trace(path):
            for x in (xa, xb):
                x.submit_host_func(lambda: None)
                x.wait_all()
        with open(path) as f:
            doc = json.load(f)
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for x, prio in ((xa, 7), (xb, 3)):
        tid = x.handle & 0xFFFFFFFF
        assert names.get(tid, "").startswith("XQueue 0x%x prio %d host queue" % (tid, prio)), \
            names
    assert (gone_handle & 0xFFFFFFFF) not in names, names
    for x in (xa, xb):
        x.close()
    qa.close()
    qb.close()


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

def _ev(ph, tid, ts, name="command", **args):
    e = {"ph": ph, "pid": 1, "tid": tid, "ts": ts, "name": name, "args": args}
    if ph in "be":
        e["id"] = "0x%x.%d" % (tid, args["seq"])
    return e


def test_trace_slices_splits_the_lows_time():
    """benchmarks/python/trace_slices.py on a hand-made trace (times in us): a protected
    queue (track 1) opens a slice [100, 300) in a unit [100, 500); a lower queue (track 2)
    has a command submitted at 50, committed at 120, complete at 200 (held 50-120, running
    120-200), and one submitted, committed and complete at 900-1000."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks", "python"))
    import trace_slices

    ev = [{"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "low"}},
          _ev("i", 1, 0, "submit", a=1, b=0), _ev("b", 1, 0, seq=1), _ev("e", 1, 0, seq=1),
          _ev("i", 2, 50, "submit", a=1, b=0),
          _ev("i", 1, 100, "unit", a=1, b=0), _ev("i", 1, 100, "slice", a=200000, b=0),
          _ev("i", 1, 110, "submit", a=2, b=0), _ev("b", 1, 110, seq=2),
          _ev("b", 2, 120, seq=1), _ev("i", 1, 150, "unit", a=0, b=0),
          _ev("e", 2, 200, seq=1), _ev("e", 1, 500, seq=2),
          _ev("i", 2, 900, "submit", a=2, b=0), _ev("b", 2, 900, seq=2),
          _ev("e", 2, 1000, seq=2)]
    a = trace_slices.analyse({"traceEvents": ev})
    assert a["window_us"] == 1000 and a["slices"] == 1, a
    assert a["slice_us"] == 200 and a["unit_us"] == 400, a
    (low,) = a["lows"]
    assert low["name"] == "low" and low["commands"] == 2, low

    def close(got, want):
        assert all(abs(g - w) < 1e-9 for g, w in zip(got, want)), (got, want)

    close(low["slices"], (80 / 200, 20 / 200, 100 / 200))  # held 100-120, ran 120-200
    close(low["units"], (0, 0, 1))  # [300, 500): nothing submitted
    # [0, 100) and [500, 1000): held 50-100, ran 900-1000
    close(low["outside"], (100 / 600, 50 / 600, 450 / 600))
    assert trace_slices.analyse({"traceEvents": ev[:4]}) is None  # no slices


if __name__ == "__main__":
    import _runner
    rc = _runner.run(globals(), "xsched trace (host backend)")
    xsched.shutdown()
    sys.exit(rc)
