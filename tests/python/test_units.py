"""Explicit units from Python (``XQueue.unit()``) on the host backend:

- units inside a ``running()`` scope are what the objective measures: the alone estimate is
  a unit's time (``stats().alone_unit_ns``), not the scope's, and the controller looks;
- a unit whose body raises is still ended (the next one begins), and the exception is the
  body's;
- units do not nest (``NotAllowedError``), and a unit needs an open XQueue.
(``XQueue.capture()`` is checked on a GPU, tests/python/test_gpu.py.)

Run with pytest or alone (``python3 tests/python/test_units.py``).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "bindings", "python")))

import xsched  # noqa: E402


def test_units_in_a_scope_are_measured():
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq, priority=2, objective=2.0) as xq:
        with xq.running(per_operator=False):
            for _ in range(100):
                with xq.unit():
                    cmd = xq.submit_host_func(time.sleep, 0.0005)
                cmd.wait()
        st = xq.stats()
        # A unit is one 0.5 ms command; the scope held 100 of them.
        assert 400000 <= st.alone_unit_ns < 20 * 1000000, st
        assert st.alone_command_ns == 0, st
        assert st.objective_looks >= 1, st


def test_a_unit_that_raises_is_ended():
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq, priority=2, objective=2.0) as xq:
        try:
            with xq.unit():
                raise KeyError("the body's")
        except KeyError as e:
            assert e.args == ("the body's",)
        with xq.unit():  # the last one was ended: this one may begin
            xq.submit_host_func(time.sleep, 0.0001).wait()


def test_units_do_not_nest():
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq, priority=2) as xq:
        with xq.unit():
            try:
                with xq.unit():
                    pass
            except xsched.NotAllowedError:
                pass
            else:
                raise AssertionError("a unit inside a unit was not refused")
    try:
        with xq.unit():
            pass
    except xsched.XSchedError:
        pass
    else:
        raise AssertionError("a unit on a closed XQueue was not refused")


# ---------------------------------------------------------------------------------------

def _main():
    import _runner
    return _runner.run(globals(), "xsched units, library %s" % xsched.library_path,
                       only=sys.argv[1:])


if __name__ == "__main__":
    sys.exit(_main())
