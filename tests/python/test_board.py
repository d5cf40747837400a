"""Two Python processes coordinate through the board on the host backend (no GPU needed):
the binding is ctypes over the same library, so nothing in it is special to the board.

A low process (priority 0) keeps 1 ms host functions coming and records when each starts;
a high process (priority 10, made by this test as a second interpreter) runs 40 commands of
2 ms. While the high process has work, the low one starts at most what it had committed
(3 at most, where it would start about 80); afterwards it runs again; and
``XQueue.board()`` shows each what it sees (the other's top priority, the hold). Both
processes get ``XSCHED_BOARD`` = a temporary directory of their own.

Run with pytest (``python3 -m pytest tests/python``) or alone
(``python3 tests/python/test_board.py``).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BINDINGS = os.path.join(HERE, "..", "..", "bindings", "python")
sys.path.insert(0, os.path.abspath(BINDINGS))

HIGH = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import xsched
q = xsched.HostQueue()
xq = xsched.XQueue(q, priority=10)
ready = sys.argv[2]
while not os.path.exists(ready):
    time.sleep(0.001)
time.sleep(0.05)
t0 = time.monotonic()
for _ in range(40):
    xq.submit_host_func(time.sleep, 0.002)
xq.wait_all()
t1 = time.monotonic()
print("%.6f %.6f" % (t0, t1), flush=True)
xq.close()
q.close()
"""


def _wait(pred, timeout):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.001)
    return True


def test_two_processes():
    d = tempfile.mkdtemp(prefix="xs-board-py-")
    os.environ["XSCHED_BOARD"] = d
    import xsched
    xsched.shutdown()  # settings read again: this test's board
    starts = []
    stop = threading.Event()
    q = xsched.HostQueue()
    low = xsched.XQueue(q, level=xsched.PreemptLevel.DEACTIVATE, priority=0)

    def one():
        starts.append(time.monotonic())
        time.sleep(0.001)

    def load():
        while not stop.is_set():
            for _ in range(4):
                low.submit_host_func(one)
            low.wait_all()

    ready = os.path.join(d, "ready")
    high = subprocess.Popen([sys.executable, "-c", HIGH, os.path.abspath(BINDINGS), ready],
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert _wait(lambda: low.board().limited, 20), low.board()
        b = low.board()
        print("low sees: %s" % (b,))
        assert b.joined and b.processes == 1 and b.others_top == 10, b
        th = threading.Thread(target=load)
        th.start()
        time.sleep(0.05)
        open(ready, "w").close()
        out, _ = high.communicate(timeout=120)
        t0, t1 = (float(x) for x in out.split())
        assert _wait(lambda: any(s > t1 for s in starts), 10)
        stop.set()
        th.join()
    finally:
        stop.set()
        if high.poll() is None:
            high.kill()
        low.close()
        q.close()
        xsched.shutdown()
        shutil.rmtree(d, ignore_errors=True)
        del os.environ["XSCHED_BOARD"]
    before = sum(1 for s in starts if t0 - 0.05 <= s < t0)
    during = sum(1 for s in starts if t0 <= s < t1)
    after = sum(1 for s in starts if s >= t1)
    print("low starts: %d in the 50 ms before the high process's work, %d during its "
          "%.0f ms (expected at most 3), %d after" % (before, during, (t1 - t0) * 1e3,
                                                     after))
    assert before > 0 and during <= 3 and after > 0


def test_off():
    os.environ["XSCHED_BOARD"] = "off"
    import xsched
    xsched.shutdown()
    try:
        q = xsched.HostQueue()
        xq = xsched.XQueue(q)
        b = xq.board()
        assert not b.joined and b.others_top == xsched.BOARD_NONE, b
        xq.close()
        q.close()
    finally:
        xsched.shutdown()
        del os.environ["XSCHED_BOARD"]


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import _runner
    sys.exit(_runner.run(globals(), "the board across two Python processes"))
