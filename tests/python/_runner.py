"""A pytest-free runner for the test_* functions of a test module (pytest, where it is
installed, collects the same functions itself)."""
import sys
import time
import traceback


class Skip(Exception):
    """Raised by a test that cannot judge what it checks on this host (its message says
    why); pytest's own skip is taken the same way."""


def _is_skip(e):
    return isinstance(e, Skip) or type(e).__name__ == "Skipped"


def run(namespace, title, only=()):
    """Run every callable test_* of @namespace (a module's globals()) in source order,
    or only those whose names contain one of @only. Returns the exit code: 0, 1 if a test
    failed, or 77 (meson's skip) if none failed and one was skipped."""
    tests = [(n, f) for n, f in namespace.items()
             if n.startswith("test_") and callable(f) and hasattr(f, "__code__")]
    tests.sort(key=lambda kv: kv[1].__code__.co_firstlineno)
    failed = skipped = 0
    print(title)
    for name, fn in tests:
        if only and not any(o in name for o in only):
            continue
        t0 = time.monotonic()
        try:
            fn()
        except BaseException as e:  # noqa: B902
            if _is_skip(e):
                skipped += 1
                print("skip %s (%s)" % (name, e))
                continue
            failed += 1
            traceback.print_exc()
            print("FAIL %s (%s: %s)" % (name, type(e).__name__, e))
        else:
            print("ok   %s (%.2f s)" % (name, time.monotonic() - t0))
    if failed:
        print("%d failed" % failed)
    elif skipped:
        print("%d skipped (the lines starting skip say why), the others passed" % skipped)
    else:
        print("all passed")
    sys.stdout.flush()
    return 1 if failed else 77 if skipped else 0
