"""What a Python user is told when something is wrong (host backend, no GPU needed):

- an exception carries the reason the C side gives (``XResultLastMessage()``, the text of
  the log line) with logging off: priority 1000 names the valid range;
- a bad setting in the environment is reported once on stderr with logging off, naming
  what was read and what is used instead.

Run with pytest or alone (``python3 tests/python/test_errors.py``).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BINDINGS = os.path.join(HERE, "..", "..", "bindings", "python")
sys.path.insert(0, os.path.abspath(BINDINGS))

import xsched  # noqa: E402


def _raises(cls, fn, *args):
    try:
        fn(*args)
    except cls as e:
        return e
    raise AssertionError("%s did not raise %s" % (fn, cls.__name__))


def test_priority_out_of_range_names_the_range():
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq) as xq:
        e = _raises(xsched.InvalidValueError, setattr, xq, "priority", 1000)
        assert e.func == "XHintPriority", e.func
        assert e.reason == ("XHintPriority: 1000 is outside [%d, %d] and not "
                            "PRIORITY_NO_EXECUTE" % (xsched.PRIORITY_MIN,
                                                     xsched.PRIORITY_MAX)), e.reason
        assert str(e) == ("XHintPriority: kXSchedErrorInvalidValue: 1000 is outside "
                          "[-255, 255] and not PRIORITY_NO_EXECUTE"), str(e)
        assert xsched.last_reason() == ""  # the exception took it


def test_reasons_of_other_failures():
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq) as xq:
        e = _raises(xsched.InvalidValueError, xq.set_launch_config, 2, 8)
        assert "threshold 2 is below batch size 8" in str(e), str(e)
    with xsched.HostQueue() as hwq:
        e = _raises(xsched.NotSupportedError, xsched.XQueue, hwq,
                    xsched.PreemptLevel.INTERRUPT)
        assert "supports preemption levels up to" in e.reason, e.reason


def test_command_failure_has_no_stale_reason():
    """A command's own error has no reason in words; the exception must not carry the
    reason of an earlier failure."""
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq) as xq:
        _raises(xsched.InvalidValueError, setattr, xq, "priority", 1000)
        cmd = xq.submit_callable(lambda: xsched.Result.ERROR_HARDWARE)
        e = _raises(xsched.HardwareError, cmd.wait)
        assert "1000" not in str(e), str(e)


def test_bad_setting_reported_once_with_logging_off():
    code = ("import xsched\n"
            "for _ in range(2):\n"
            "    with xsched.HostQueue() as q, xsched.XQueue(q):\n"
            "        pass\n"
            "    xsched.shutdown()\n")
    env = dict(os.environ, XSCHED_POLICY="BOGUS", XSCHED_BUDGET_US="abc",
               XSCHED_SCHEDULER="foo")
    env.pop("XSCHED_LOG", None)
    r = subprocess.run([sys.executable, "-c", code], cwd=BINDINGS, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    for head, instead in (("XSCHED_POLICY=BOGUS ", "using HPF"),
                          ("XSCHED_BUDGET_US=abc ", "using 1000 (the default)"),
                          ("XSCHED_SCHEDULER=foo ", "using LCL")):
        got = [ln for ln in lines if ln.startswith("xsched[core] warn: " + head)]
        assert len(got) == 1 and instead in got[0], (head, r.stderr)
    assert len(lines) == 3, r.stderr


# ---------------------------------------------------------------------------------------

def _main():
    import _runner
    return _runner.run(globals(), "xsched errors, library %s" % xsched.library_path,
                       only=sys.argv[1:])


if __name__ == "__main__":
    sys.exit(_main())
