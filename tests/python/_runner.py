"""A pytest-free runner for the test_* functions of a test module (pytest, where it is
installed, collects the same functions itself)."""
import sys
import time
import traceback


def run(namespace, title, only=()):
    """Run every callable test_* of @namespace (a module's globals()) in source order,
    or only those whose names contain one of @only. Returns the exit code: 0 or 1."""
    tests = [(n, f) for n, f in namespace.items()
             if n.startswith("test_") and callable(f) and hasattr(f, "__code__")]
    tests.sort(key=lambda kv: kv[1].__code__.co_firstlineno)
    failed = 0
    print(title)
    for name, fn in tests:
        if only and not any(o in name for o in only):
            continue
        t0 = time.monotonic()
        try:
            fn()
        except BaseException as e:  # noqa: B902
            failed += 1
            traceback.print_exc()
            print("FAIL %s (%s: %s)" % (name, type(e).__name__, e))
        else:
            print("ok   %s (%.2f s)" % (name, time.monotonic() - t0))
    print("%d failed" % failed if failed else "all passed")
    sys.stdout.flush()
    return 1 if failed else 0
