"""Python bindings for libxsched (ctypes only: no compiled extension, no dependency).

libxsched schedules GPU work inside one process: each application-owned stream (a CUDA or
HIP stream, e.g. a ``torch.cuda.Stream``, or a CPU "host queue") gets an XQueue in front of
it, and a scheduler thread suspends and resumes XQueues by policy (HPF: highest priority
first).  The library never creates or destroys a GPU context, so it works after PyTorch
created its own.  See doc/python.md.

Quick start (README.md has complete programs, for the host backend and for a GPU)::

    import xsched
    with xsched.HostQueue() as hwq, xsched.XQueue(hwq, priority=10) as xq:
        cmd = xq.submit_callable(sum, range(1000))      # runs when the scheduler allows
        print(cmd.wait())                               # 499500

    import torch
    s = torch.cuda.Stream()
    with xsched.XQueue(s, priority=10) as xq:          # wraps the stream, HPF priority 10
        y = xq.submit_callable(model, x).wait()         # model(x) runs on s

Objects and lifetime:

- :class:`HostQueue`, :class:`CudaQueue`, :class:`HipQueue` wrap a HwQueue;
  :class:`XQueue` wraps an XQueue; :class:`Command` wraps a command.  Each has ``close()``,
  works as a context manager and is closed by the garbage collector as a last resort.
- Python callables given to the library are never handed to C: C receives an integer
  token, and two module-level trampolines (which live as long as the process) look the
  token up.  The callable and its arguments are held until the command has run, or until
  it can no longer run (destroyed unsubmitted, or its XQueue waited for or closed), so
  submit-and-forget is safe: ``xq.submit_callable(fn)`` with the result dropped still
  runs ``fn``.
- Exceptions raised by a callable are caught on the library thread (never killing it),
  reported through :data:`sys.unraisablehook`, stored on the command and re-raised by
  :meth:`Command.wait` / :meth:`XQueue.wait` (and the first one by
  :meth:`XQueue.wait_all`); the command's result becomes an error, and the XQueue stays
  usable.
- Callbacks run on library threads and take the GIL: see doc/python.md ("The GIL").
"""

from __future__ import annotations

import atexit
import collections
import ctypes
import ctypes.util
import dataclasses
import enum
import glob
import itertools
import os
import sys
import threading
import time
import traceback
import weakref
from contextlib import contextmanager
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_int, c_int32, c_int64, c_size_t,
                    c_uint8, c_uint32, c_uint64, c_void_p)
from typing import Any, Callable, Optional

__version__ = "0.6.0"  # follows the library it was written with

__all__ = [
    "Result", "PreemptLevel", "QueueState", "Scheduler", "Policy", "QueueCreateFlag",
    "QueueSuspendFlag", "QueueResumeFlag",
    "XSchedError", "HardwareError", "InvalidValueError", "NotFoundError", "NotAllowedError",
    "NotSupportedError", "BadResponseError", "UnknownError", "LibraryNotFoundError",
    "QueueStats", "BoardInfo", "BOARD_NONE", "HwQueue", "HostQueue", "CudaQueue", "HipQueue", "XQueue", "Command", "Scope",
    "host_func", "launch_callback", "set_scheduler", "shutdown", "set_timeslice", "trace",
    "set_k_deadline", "set_commit_budget", "stream_pointer", "hw_queue_for", "error_for", "check", "has_function",
    "result_name",
    "library_path", "lib",
    "PRIORITY_NO_EXECUTE", "PRIORITY_MIN", "PRIORITY_DEFAULT", "PRIORITY_MAX",
    "UTILIZATION_MIN", "UTILIZATION_DEFAULT", "UTILIZATION_MAX",
    "TIMESLICE_MIN", "TIMESLICE_DEFAULT", "TIMESLICE_MAX", "NO_LAXITY", "NO_DEADLINE",
    "DEFAULT_THRESHOLD", "DEFAULT_BATCH_SIZE",
]

# ----------------------------------------------------------------------------------------
# Constants and enums (values from include/xsched.h)
# ----------------------------------------------------------------------------------------

PRIORITY_NO_EXECUTE = -256
PRIORITY_MIN = -255
PRIORITY_DEFAULT = 0
PRIORITY_MAX = 255
UTILIZATION_MIN = 0
UTILIZATION_DEFAULT = 100
UTILIZATION_MAX = 100
TIMESLICE_MIN = 100          # us
TIMESLICE_DEFAULT = 5000     # us
TIMESLICE_MAX = 10000000     # us
NO_LAXITY = -1
NO_DEADLINE = -1
DEFAULT_THRESHOLD = 16
DEFAULT_BATCH_SIZE = 8


class Result(enum.IntEnum):
    """XResult."""
    SUCCESS = 0
    ERROR_HARDWARE = 1
    ERROR_INVALID_VALUE = 2
    ERROR_NOT_FOUND = 3
    ERROR_NOT_ALLOWED = 4
    ERROR_NOT_SUPPORTED = 5
    ERROR_BAD_RESPONSE = 6
    ERROR_UNKNOWN = 999


class PreemptLevel(enum.IntEnum):
    """XPreemptLevel."""
    UNKNOWN = 0
    BLOCK = 1        # Lv1: stop launching; in-flight commands finish
    DEACTIVATE = 2   # Lv2: a device-side gate stops the stream at the next command
    INTERRUPT = 3    # Lv3: running work is interrupted (AMD CWSR)


class QueueState(enum.IntEnum):
    """XQueueState."""
    UNKNOWN = 0
    IDLE = 1
    READY = 2


class QueueCreateFlag(enum.IntFlag):
    NONE = 0x0
    BLOCKING_SUBMIT = 0x1  # not supported (as in XSched)


class QueueSuspendFlag(enum.IntFlag):
    NONE = 0x0
    SYNC_HWQUEUE = 0x1     # return once launched commands have completed (Lv1 only)
    WAIT_ALL = 0x2         # not supported
    WAIT_IDLE = 0x4        # not supported


class QueueResumeFlag(enum.IntFlag):
    NONE = 0x0
    DROP_COMMANDS = 0x1    # not supported


class Scheduler(enum.IntEnum):
    """XSchedulerType."""
    UNKNOWN = 0
    APP_MANAGED = 1
    LOCAL = 2
    GLOBAL = 3  # not supported


class Policy(enum.IntEnum):
    """XPolicyType."""
    UNKNOWN = 0
    HIGHEST_PRIORITY_FIRST = 1
    HETEROGENEOUS_HIGHEST_PRIORITY_FIRST = 2
    CPU_HIGHEST_PRIORITY_FIRST = 3
    UTILIZATION_PARTITION = 4
    PROCESS_UTILIZATION_PARTITION = 5
    STRICT_PROCESS_UTILIZATION_PARTITION = 6
    K_EARLIEST_DEADLINE_FIRST = 7
    LAXITY = 8
    ACTIVE_WINDOW_FIRST = 9
    COMPLETELY_FAIR_SCHEDULER = 10
    MULTI_LEVEL_FEEDBACK_QUEUE = 11
    FIRST_IN_FIRST_OUT = 100      # this library's own
    EARLIEST_DEADLINE_FIRST = 101  # this library's own
    HPF = 1
    UP = 4
    KEDF = 7
    LAX = 8
    CFS = 10
    MLFQ = 11
    FIFO = 100
    EDF = 101


# ----------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------

class XSchedError(Exception):
    """An XResult other than kXSchedSuccess.

    ``code`` is the :class:`Result`, ``name`` its C name (e.g. ``kXSchedErrorNotFound``),
    ``func`` the C function that returned it (or None), ``reason`` why the library says it
    failed (``XResultLastMessage()``: the text its log line would give, e.g.
    ``"XHintPriority: 1000 is outside [-255, 255] and not PRIORITY_NO_EXECUTE"``; "" when
    it gave none). The message is ``func: name: reason`` (the reason without a repeated
    ``func:``), then this module's own words if any.
    """
    code: Result = Result.ERROR_UNKNOWN

    def __init__(self, message: str = "", code: Optional[int] = None,
                 func: Optional[str] = None, reason: str = ""):
        if code is not None:
            try:
                self.code = Result(code)
            except ValueError:
                self.code = code  # an unknown value from a newer library
        self.func = func
        self.name = result_name(self.code)
        self.reason = reason
        text = "%s: %s" % (func, self.name) if func else self.name
        if reason:
            text += ": " + (reason[len(func) + 2:] if func and reason.startswith(func + ": ")
                            else reason)
        if message:
            text += ": " + message
        super().__init__(text)


class HardwareError(XSchedError):
    """kXSchedErrorHardware: the device, its runtime or a command failed."""
    code = Result.ERROR_HARDWARE


class InvalidValueError(XSchedError, ValueError):
    """kXSchedErrorInvalidValue: an argument is out of range."""
    code = Result.ERROR_INVALID_VALUE


class NotFoundError(XSchedError, LookupError):
    """kXSchedErrorNotFound: a handle is 0, unknown or already destroyed."""
    code = Result.ERROR_NOT_FOUND


class NotAllowedError(XSchedError):
    """kXSchedErrorNotAllowed: valid, but not in the object's state."""
    code = Result.ERROR_NOT_ALLOWED


class NotSupportedError(XSchedError):
    """kXSchedErrorNotSupported: this build, HwQueue or machine cannot do it."""
    code = Result.ERROR_NOT_SUPPORTED


class BadResponseError(XSchedError):
    """kXSchedErrorBadResponse (kept for XSched compatibility)."""
    code = Result.ERROR_BAD_RESPONSE


class UnknownError(XSchedError):
    """kXSchedErrorUnknown: out of memory or an internal error."""
    code = Result.ERROR_UNKNOWN


class LibraryNotFoundError(ImportError):
    """libxsched.so could not be found or loaded."""


# The C names, derived from the member names (ERROR_NOT_FOUND: kXSchedErrorNotFound);
# tests/python/test_header.py checks them against include/xsched.h.
_C_NAMES = {r: "kXSched" + "".join(w.capitalize() for w in r.name.split("_")) for r in Result}
_ERROR_CLASSES = {cls.code: cls for cls in (HardwareError, InvalidValueError, NotFoundError,
                                            NotAllowedError, NotSupportedError,
                                            BadResponseError, UnknownError)}


def result_name(code: int) -> str:
    """The C name of XResult ``code`` (e.g. ``kXSchedErrorNotFound``), as the library's
    XResultName() gives it (this module's own table with a library that lacks the call);
    ``XResult(<code>)`` for a value that is no XResult."""
    name = _C_NAMES.get(code) if _XResultName is None else _XResultName(int(code))
    if isinstance(name, bytes):
        name = name.decode("ascii", "replace")
    if not name or name == "XResult(unknown)":
        return "XResult(%d)" % int(code)
    return name


def last_reason() -> str:
    """Why the calling thread's last failed C call failed (``XResultLastMessage()``), and
    clear it; "" when it gave no reason, or when the library lacks the call."""
    if _XResultLastMessage is None:
        return ""
    return (_XResultLastMessage() or b"").decode("utf-8", "replace")


def error_for(code: int, func: Optional[str] = None, message: str = "") -> XSchedError:
    """The exception for XResult ``code`` (an :class:`XSchedError` subclass instance).

    With ``func`` (the C function that just returned ``code`` on this thread), its
    ``reason`` is what the library said about that failure (:func:`last_reason`)."""
    try:
        cls = _ERROR_CLASSES.get(Result(code), XSchedError)
    except ValueError:
        cls = XSchedError
    return cls(message, code=code, func=func, reason=last_reason() if func else "")


def check(code: int, func: Optional[str] = None) -> None:
    """Raise the :class:`XSchedError` subclass for ``code`` unless it is success."""
    if code != 0:
        raise error_for(code, func)


# ----------------------------------------------------------------------------------------
# Loading the library
# ----------------------------------------------------------------------------------------

def _sanitized(build_dir):
    """Whether a meson build directory uses a sanitizer (its library cannot be loaded
    into a Python that does not preload the sanitizer runtime)."""
    import json
    try:
        with open(os.path.join(build_dir, "meson-info", "intro-buildoptions.json")) as f:
            opts = json.load(f)
    except (OSError, ValueError):
        return False
    for o in opts:
        if o.get("name") == "b_sanitize":
            v = o.get("value")
            return bool(v) and v != "none" and v != ["none"] and v != []
    return False


def _candidates():
    """Yield (path or name, where) in search order."""
    env = os.environ.get("XSCHED_LIBRARY")
    if env:
        yield env, "XSCHED_LIBRARY"
        return  # an explicit choice: no silent fallback to another copy
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(root, "include", "xsched.h")):
        builds = [p for p in glob.glob(os.path.join(root, "build*", "libxsched.so"))
                  if not _sanitized(os.path.dirname(p))]
        builds.sort(key=lambda p: os.path.getmtime(p), reverse=True)  # newest build first
        for p in builds:
            yield p, "build directory of the checkout"
    yield os.path.join(here, "libxsched.so"), "next to xsched.py"
    import sysconfig
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    seen = set()
    bases = [sys.prefix, sys.base_prefix, "/usr/local", "/usr"]
    parts = here.split(os.sep)
    for libname in ("lib", "lib64"):  # installed as <prefix>/lib/pythonX.Y/site-packages
        if libname in parts:
            i = len(parts) - 1 - parts[::-1].index(libname)
            bases.insert(0, os.sep.join(parts[:i]) or os.sep)
    for base in bases:
        for libdir in ("lib", "lib64", os.path.join("lib", multiarch)):
            p = os.path.join(base, libdir, "libxsched.so")
            if p not in seen and os.path.isfile(p):
                seen.add(p)
                yield p, "install prefix"
    name = ctypes.util.find_library("xsched")
    if name:
        yield name, "system loader (find_library)"
    yield "libxsched.so", "system loader"


def _load():
    tried = []
    for cand, where in _candidates():
        if os.sep in cand and not os.path.exists(cand):
            tried.append("%s (%s): no such file" % (cand, where))
            continue
        try:
            return ctypes.CDLL(cand), cand
        except OSError as e:
            tried.append("%s (%s): %s" % (cand, where, e))
    raise LibraryNotFoundError(
        "libxsched.so not found. Build it (meson setup build && ninja -C build) and set "
        "XSCHED_LIBRARY=/path/to/libxsched.so, or install it where the system loader finds "
        "it. Tried:\n  " + "\n  ".join(tried))


lib, library_path = _load()

XQueueHandle = c_uint64
HwQueueHandle = c_uint64
HwCommandHandle = c_uint64
XResult = c_int
HostFunctionType = CFUNCTYPE(c_int, c_void_p)
LaunchCallbackType = CFUNCTYPE(c_int, c_uint64, c_void_p)
CudaFuncResolverType = CFUNCTYPE(c_int, POINTER(c_void_p), c_void_p)


class XQueueStats(Structure):
    """The C struct XQueueStats."""
    _fields_ = [("submitted", c_uint64), ("launched", c_uint64), ("completed", c_uint64),
                ("failed", c_uint64), ("pending", c_uint64), ("in_flight", c_uint64),
                ("suspensions", c_uint64), ("suspended_ns", c_uint64),
                ("committed", c_uint64), ("est_command_ns", c_uint64),
                ("slowdown_permille", c_uint64), ("alone_command_ns", c_uint64),
                ("corun_budget_ns", c_uint64), ("lower_longest_ns", c_uint64),
                ("alone_unit_ns", c_uint64), ("objective_looks", c_uint64),
                ("pace_eighths", c_uint64), ("slices", c_uint64), ("slice_ns", c_uint64),
                ("slice_over_ns", c_uint64), ("hw_priority", c_uint64)]


class XBoardInfo(Structure):
    """The C struct XBoardInfo (XQueueGetBoard)."""
    _fields_ = [("joined", c_int32), ("processes", c_int32), ("others_top", c_int32),
                ("others_busy", c_int32), ("limited", c_int32), ("share", c_int32),
                ("timesliced", c_int32), ("reserved", c_int32),
                ("others_corun_ns", c_int64)]


class XDim3(Structure):
    _fields_ = [("x", c_uint32), ("y", c_uint32), ("z", c_uint32)]


_P = POINTER
_PROTOTYPES = {
    "XQueueCreate": [_P(XQueueHandle), HwQueueHandle, c_int64, c_int64],
    "XQueueDestroy": [XQueueHandle],
    "XQueueGet": [_P(XQueueHandle), HwQueueHandle],
    "XQueueSetPreemptLevel": [XQueueHandle, c_int64],
    "XQueueGetPreemptLevel": [XQueueHandle, _P(c_int64)],
    "XQueueSetLaunchConfig": [XQueueHandle, c_int64, c_int64],
    "XQueueGetLaunchConfig": [XQueueHandle, _P(c_int64), _P(c_int64)],
    "XQueueSubmit": [XQueueHandle, HwCommandHandle],
    "XQueueWait": [XQueueHandle, HwCommandHandle],
    "XQueueWaitAll": [XQueueHandle],
    "XQueueLaunchInline": [XQueueHandle, LaunchCallbackType, c_void_p],
    "XQueueBeginScope": [XQueueHandle],
    "XQueueEndScope": [XQueueHandle],
    "XQueueBeginUnit": [XQueueHandle],
    "XQueueEndUnit": [XQueueHandle],
    "XQueueEnqueueGateCheck": [XQueueHandle],
    "XQueueQuery": [XQueueHandle, _P(c_int)],
    "XQueueSuspend": [XQueueHandle, c_int64],
    "XQueueResume": [XQueueHandle, c_int64],
    "XQueueGetStats": [XQueueHandle, _P(XQueueStats)],
    "XQueueGetBoard": [XQueueHandle, _P(XBoardInfo)],
    "XQueueProfileHwCommandCount": [XQueueHandle, _P(c_int64)],
    "HostQueueCreate": [_P(HwQueueHandle)],
    "CudaQueueCreate": [_P(HwQueueHandle), c_void_p],
    "HipQueueCreate": [_P(HwQueueHandle), c_void_p],
    "HwQueueDestroy": [HwQueueHandle],
    "HwQueueGetMaxPreemptLevel": [HwQueueHandle, _P(c_int64)],
    "HwCommandCreateCallback": [_P(HwCommandHandle), LaunchCallbackType, c_void_p],
    "HwCommandCreateHostFunc": [_P(HwCommandHandle), HostFunctionType, c_void_p],
    "HwCommandCreateKernel": [_P(HwCommandHandle), c_void_p, XDim3, XDim3, c_size_t,
                              _P(c_void_p), _P(c_size_t), c_size_t],
    "HwCommandCreateModuleKernel": [_P(HwCommandHandle), c_void_p, XDim3, XDim3, c_size_t,
                                    _P(c_void_p), _P(c_size_t), c_size_t],
    "HwCommandCreateResolvedKernel": [_P(HwCommandHandle), c_void_p, CudaFuncResolverType,
                                      XDim3, XDim3, c_size_t, _P(c_void_p), _P(c_size_t),
                                      c_size_t],
    "HwCommandCreateMemcpy": [_P(HwCommandHandle), c_void_p, c_void_p, c_size_t],
    "HwCommandCreateMemset": [_P(HwCommandHandle), c_void_p, c_uint8, c_size_t],
    "HwCommandCreateEventRecord": [_P(HwCommandHandle)],
    "HwCommandCreateEventWait": [_P(HwCommandHandle), HwCommandHandle],
    "HwCommandDestroy": [HwCommandHandle],
    "XHintSetScheduler": [c_int, c_int],
    "XHintPriority": [XQueueHandle, c_int32],
    "XSchedShutdown": [],
    "XSchedTraceStart": [ctypes.c_char_p],
    "XSchedTraceStop": [],
    # XSched hints a policy may add; bound when the library exports them.
    "XHintUtilization": [XQueueHandle, c_int32],
    "XHintTimeslice": [c_int64],
    "XHintDeadline": [XQueueHandle, c_int64],
    "XHintLaxity": [XQueueHandle, c_int64, c_int32, c_int32],
    "XHintKDeadline": [c_size_t],
    "XHintCommitBudget": [c_int64],
    "XHintCorunBudget": [c_int64],
    "XHintStrictPriority": [ctypes.c_int],
    "XHintLatencyObjective": [XQueueHandle, ctypes.c_double],
}


class _C:
    """The C functions, as raw ctypes functions returning the XResult as an int.

    A function this library build does not export is replaced by one that returns
    kXSchedErrorNotSupported, so callers get :class:`NotSupportedError`.
    """


def _missing(name):
    def f(*args):
        return int(Result.ERROR_NOT_SUPPORTED)
    f.__name__ = name
    f.missing = True
    return f


for _name, _argtypes in _PROTOTYPES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        _f = _missing(_name)
    else:
        _f.argtypes = _argtypes
        _f.restype = XResult
    setattr(_C, _name, _f)
del _name, _argtypes, _f


# Functions of the header that return something other than an XResult, bound when the
# library exports them (a library older than XResultName lacks it: result_name() then
# uses this module's table).
_STRING_PROTOTYPES = {
    "XResultName": [XResult],
    "XResultLastMessage": [],
}


def _string_function(name):
    try:
        f = getattr(lib, name)
    except AttributeError:
        return None
    f.argtypes = _STRING_PROTOTYPES[name]
    f.restype = ctypes.c_char_p
    return f


_XResultName = _string_function("XResultName")
_XResultLastMessage = _string_function("XResultLastMessage")


def has_function(name: str) -> bool:
    """Whether the loaded library exports C function ``name``."""
    if name in _STRING_PROTOTYPES:
        return hasattr(lib, name)
    f = getattr(_C, name, None)
    return f is not None and not getattr(f, "missing", False)


def _call(name, *args):
    res = getattr(_C, name)(*args)
    if res != 0:
        if getattr(getattr(_C, name), "missing", False):
            raise NotSupportedError("this libxsched (%s) does not export %s"
                                    % (library_path, name), code=res, func=name)
        raise error_for(res, name)


# ----------------------------------------------------------------------------------------
# Callables run by the library: tokens, payloads, trampolines
# ----------------------------------------------------------------------------------------

_tokens = itertools.count(1)
# token -> _Payload of every host-function or launch-callback command whose callable may
# still be called. Dict operations are atomic under the GIL; no lock is held across C calls.
_registry: dict = {}
_tls = threading.local()


class _Payload:
    """What Python keeps for one command: its callable and arguments until it has run (or
    cannot run any more), and its outcome (return value, exception) afterwards."""
    __slots__ = ("token", "kind", "fn", "args", "kwargs", "stream_ctx", "value", "exc",
                 "ran", "xq_handle", "xq_ref", "keep", "label", "__weakref__")

    def __init__(self, kind, fn=None, args=(), kwargs=None, keep=None):
        self.token = next(_tokens)
        self.kind = kind
        self.fn = fn
        self.args = args
        self.kwargs = kwargs or {}
        self.stream_ctx = None
        self.value = None
        self.exc = None
        self.ran = False
        self.xq_handle = 0
        self.xq_ref = None
        self.keep = keep  # buffers a GPU command reads or writes
        self.label = "%s %s" % (kind, _describe(fn)) if fn is not None else kind

    def release(self):
        """Drop what the command needed to run; keep its outcome."""
        _registry.pop(self.token, None)
        self.fn = None
        self.args = ()
        self.kwargs = {}
        self.stream_ctx = None
        self.keep = None


def _describe(fn):
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if name else repr(fn)


class _Unraisable:
    """Same attributes as sys.UnraisableHookArgs."""
    __slots__ = ("exc_type", "exc_value", "exc_traceback", "err_msg", "object")

    def __init__(self, exc, msg, obj):
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = msg
        self.object = obj


class _Where:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _report(exc, payload):
    """Report an exception raised by a callable the library ran (never raises)."""
    try:
        where = _Where("<%s of XQueue 0x%x>" % (payload.label, payload.xq_handle))
        msg = "Exception ignored in an xsched callback (re-raised by wait())"
        hook = sys.unraisablehook
        if hook is sys.__unraisablehook__:
            # The default hook accepts only the interpreter's own argument type; print
            # what it would print.
            sys.stderr.write("%s: %r\n%s" % (msg, where, "".join(
                traceback.format_exception(type(exc), exc, exc.__traceback__))))
            sys.stderr.flush()
        else:
            hook(_Unraisable(exc, msg, where))
    except BaseException:  # noqa: B902 - reporting must never fail the library thread
        pass


def _result_code(value):
    """The XResult for a callable's return value: a Result (or XSchedError instance)
    becomes that code; anything else is success."""
    if isinstance(value, Result):
        return int(value)
    return 0


def _invoke(token, hwq):
    payload = _registry.pop(token, None)  # the library calls each command once
    if payload is None:
        return int(Result.ERROR_NOT_FOUND)
    prev = getattr(_tls, "xq", 0)
    _tls.xq = payload.xq_handle
    code = 0
    try:
        fn, args, kwargs, ctx = payload.fn, payload.args, payload.kwargs, payload.stream_ctx
        if payload.kind == "launch callback" and args is None:
            args = (hwq,)  # a raw launch callback: fn(hwq)
        if ctx is not None:
            with ctx():
                value = fn(*args, **kwargs)
        else:
            value = fn(*args, **kwargs)
        payload.value = value
        code = _result_code(value)
    except BaseException as e:  # noqa: B902 - nothing may escape to the library thread
        payload.exc = e
        code = int(e.code) if isinstance(e, XSchedError) and int(e.code) != 0 \
            else int(Result.ERROR_HARDWARE)
        xq = payload.xq_ref() if payload.xq_ref is not None else None
        if xq is not None:
            xq._errors.append(e)
        _report(e, payload)
    finally:
        payload.ran = True
        payload.release()
        _outstanding_pop(payload)
        _tls.xq = prev
    return code


def _outstanding_pop(payload):
    xq = payload.xq_ref() if payload.xq_ref is not None else None
    if xq is not None:
        xq._outstanding.pop(payload.token, None)



def _host_trampoline(data):
    try:
        return _invoke(data or 0, 0)
    except BaseException:  # noqa: B902 - only if the interpreter itself is in trouble
        return int(Result.ERROR_UNKNOWN)


def _launch_trampoline(hwq, data):
    try:
        return _invoke(data or 0, hwq)
    except BaseException:  # noqa: B902
        return int(Result.ERROR_UNKNOWN)


# Module-level, never freed: the library may call them from any thread until it is done.
_HOST_TRAMPOLINE = HostFunctionType(_host_trampoline)
_LAUNCH_TRAMPOLINE = LaunchCallbackType(_launch_trampoline)


class _InlineOp:
    """One call run by XQueueLaunchInline on the calling thread."""
    __slots__ = ("fn", "args", "kwargs", "value", "exc", "ran")

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.value = self.exc = None
        self.ran = False


def _inline_trampoline(hwq, data):
    # Called by XQueueLaunchInline on the thread that called it, which pushed the op.
    op = _tls.inline[-1]
    op.ran = True
    try:
        op.value = op.fn(*op.args, **op.kwargs)
    except BaseException as e:  # noqa: B902 - re-raised by launch_inline on this thread
        op.exc = e
    return 0


_INLINE_TRAMPOLINE = LaunchCallbackType(_inline_trampoline)
_NO_LAUNCH = LaunchCallbackType()  # a null launch: XQueueLaunchInline's boundary


def _in_callback_of(xq_handle):
    return xq_handle != 0 and getattr(_tls, "xq", 0) == xq_handle


def _in_any_callback():
    return getattr(_tls, "xq", 0) != 0


# Objects whose close() was asked for by the garbage collector inside a callback, where
# it could wait for the calling thread itself. Closed later from an ordinary thread.
_deferred: list = []
_deferred_lock = threading.Lock()


def _flush_deferred():
    if _in_any_callback() or not _deferred:
        return
    with _deferred_lock:
        objs = _deferred[:]
        del _deferred[:]
    for o in objs:
        try:
            o.close()
        except Exception:
            pass


# ----------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class QueueStats:
    """Per-XQueue statistics (XQueueStats). Counters start at 0 when the XQueue is made."""
    submitted: int
    launched: int
    completed: int
    failed: int
    pending: int
    in_flight: int
    suspensions: int
    suspended_ns: int
    committed: int  # highest command number the device may run
    est_command_ns: int  # estimated device time of one command (ns), 0 before the first
    # With a latency objective (XQueue.objective): the p99 slowdown of its units at the
    # controller's last look, per mille (0 = none yet), and the alone estimate (ns).
    slowdown_permille: int
    alone_command_ns: int
    corun_budget_ns: int  # co-run budget in force on the device (ns); 2**64 - 1: no limit
    # With an objective: the longest lower command charged in the last window (ns); longer
    # than the objective allows over alone, no co-run budget can hold it (0.6; 0 before).
    lower_longest_ns: int = 0
    # 0.7: the alone estimate of scope and explicit units (XQueue.unit()), ns; the
    # controller's looks; the pacing in force (eighths of a unit's slack its slice gives
    # lower queues); the device's slices, their length and the lower time past their ends
    # (ns); the hardware priority the library set on the stream (2 greatest, 1 least, 0
    # none yet).
    alone_unit_ns: int = 0
    objective_looks: int = 0
    pace_eighths: int = 0
    slices: int = 0
    slice_ns: int = 0
    slice_over_ns: int = 0
    hw_priority: int = 0

    @property
    def slowdown(self) -> float:
        """The measured slowdown as a ratio (1.2 = 20% slower than alone); 0.0 = none."""
        return self.slowdown_permille / 1000.0

    @classmethod
    def from_c(cls, s: XQueueStats) -> "QueueStats":
        return cls(*(getattr(s, f) for f, _ in XQueueStats._fields_))

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


BOARD_NONE = -2**31  # XBOARD_NONE: no priority


@dataclasses.dataclass(frozen=True)
class BoardInfo:
    """What the board of an XQueue's device says (XBoardInfo): the processes that use the
    device coordinate through it (priorities compare across them as within one)."""
    joined: bool  # this process holds a slot (False: it runs alone on the device)
    processes: int  # other live processes on the board
    others_top: int  # their greatest priority on the device (idle queues count); BOARD_NONE
    others_busy: int  # theirs that holds this process now; BOARD_NONE
    limited: bool  # this XQueue is below the device's top priority (budget-limited)
    share: int  # processes sharing the commitment budget, this one included
    timesliced: bool  # the device runs one process at a time (CUDA without MPS)
    others_corun_ns: int  # co-run others_busy's processes allow, ns (0 none, INT64_MAX all)

    @classmethod
    def from_c(cls, b: XBoardInfo) -> "BoardInfo":
        return cls(bool(b.joined), b.processes, b.others_top, b.others_busy, bool(b.limited),
                   b.share, bool(b.timesliced), b.others_corun_ns)


# ----------------------------------------------------------------------------------------
# HwQueues
# ----------------------------------------------------------------------------------------

_live_xqueues = weakref.WeakSet()
_live_hwqueues = weakref.WeakSet()


class _Handle:
    _handle = 0
    _owned = False

    @property
    def handle(self) -> int:
        """The C handle (0 once closed)."""
        return self._handle

    @property
    def closed(self) -> bool:
        return self._handle == 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        raise NotImplementedError

    def _check_open(self):
        if not self._handle:
            raise NotFoundError("%s is closed" % type(self).__name__,
                                code=Result.ERROR_NOT_FOUND)

    def __del__(self):
        try:
            if self._handle and self._owned:
                if _in_any_callback():
                    with _deferred_lock:
                        _deferred.append(self)  # resurrected; closed later
                    return
                self.close()
        except Exception:
            pass


class HwQueue(_Handle):
    """A HwQueue: a hardware queue the application owns, as seen by the library.

    Use :class:`HostQueue`, :class:`CudaQueue` or :class:`HipQueue` to make one, or
    :meth:`attach` for a handle made elsewhere (not destroyed by ``close()``).
    """
    stream: Any = None   # the application's stream object, kept alive while wrapped
    backend = "?"

    def __init__(self, handle: int = 0, owned: bool = False):
        self._handle = int(handle)
        self._owned = owned
        self.stream_ctx = None
        if owned:
            _live_hwqueues.add(self)

    @classmethod
    def attach(cls, handle: int) -> "HwQueue":
        """Wrap an existing HwQueue handle without taking ownership."""
        return HwQueue(handle, owned=False)

    @property
    def max_preempt_level(self) -> PreemptLevel:
        """The highest preemption level this HwQueue supports (probed by the library)."""
        self._check_open()
        v = c_int64()
        _call("HwQueueGetMaxPreemptLevel", self._handle, byref(v))
        return PreemptLevel(v.value)

    def close(self) -> None:
        """HwQueueDestroy (not the native stream). Raises NotAllowedError while an XQueue
        still uses it. Idempotent."""
        h = self._handle
        if not h:
            return
        if self._owned:
            res = _C.HwQueueDestroy(h)
            if res == Result.ERROR_NOT_ALLOWED:
                raise error_for(res, "HwQueueDestroy", "an XQueue still uses it: close "
                                "that first")
        else:
            res = 0
        self._handle = 0
        self.stream = None
        self.stream_ctx = None
        check(res, "HwQueueDestroy")

    def __repr__(self):
        return "<xsched.%s 0x%x%s>" % (type(self).__name__, self._handle,
                                       "" if self._handle else " closed")


class HostQueue(HwQueue):
    """A host HwQueue: commands run in order on a CPU thread the library owns (Lv1, Lv2).
    Needs no GPU: the reference backend and the one the tests use."""
    backend = "host"

    def __init__(self):
        super().__init__(0, owned=False)
        h = HwQueueHandle()
        _call("HostQueueCreate", byref(h))
        self._handle = h.value
        self._owned = True
        _live_hwqueues.add(self)


def stream_pointer(stream) -> int:
    """The native stream pointer of ``stream``: a ``torch.cuda.Stream`` (``.cuda_stream``),
    a CuPy stream (``.ptr``), a ``ctypes.c_void_p`` or an int."""
    if isinstance(stream, bool):
        raise TypeError("a stream, not a bool")
    if isinstance(stream, int):
        return stream
    if isinstance(stream, c_void_p):
        return stream.value or 0
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    raise TypeError("expected a torch.cuda.Stream, a stream pointer (int) or c_void_p, "
                    "not %s" % type(stream).__name__)


def _torch_stream_ctx(stream):
    """For a torch stream: a factory of the context that makes it current on the calling
    thread (launch callbacks run on library threads, whose current stream is the default
    one). None for other stream objects."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(stream, "cuda_stream"):
        return None
    try:
        if not isinstance(stream, torch.cuda.Stream):
            return None
    except AttributeError:
        return None
    return lambda: torch.cuda.stream(stream)


class _GpuQueue(HwQueue):
    _create = ""

    def __init__(self, stream):
        super().__init__(0, owned=False)
        ptr = stream_pointer(stream)
        h = HwQueueHandle()
        _call(self._create, byref(h), c_void_p(ptr))
        self._handle = h.value
        self._owned = True
        self.stream = stream
        self.stream_ctx = _torch_stream_ctx(stream)
        _live_hwqueues.add(self)


class CudaQueue(_GpuQueue):
    """Wrap an application-owned CUDA stream (``torch.cuda.Stream`` or a pointer).

    The stream must not be the default stream and must outlive the HwQueue (this object
    keeps a reference to a stream object it was given). The HwQueue handle equals the
    stream pointer.
    """
    backend = "cuda"
    _create = "CudaQueueCreate"


class HipQueue(_GpuQueue):
    """Wrap an application-owned HIP stream (on ROCm PyTorch, a ``torch.cuda.Stream``)."""
    backend = "hip"
    _create = "HipQueueCreate"


def hw_queue_for(stream) -> HwQueue:
    """A HwQueue for ``stream``: HipQueue on ROCm PyTorch, CudaQueue otherwise."""
    torch = sys.modules.get("torch")
    if torch is not None and getattr(getattr(torch, "version", None), "hip", None):
        return HipQueue(stream)
    return CudaQueue(stream)


# ----------------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------------

class Command(_Handle):
    """A command (HwCommand). Made by the factory functions below or by the XQueue
    helpers; submitted at most once to one XQueue.

    ``close()`` destroys the handle: a submitted command still runs, but can no longer be
    waited for. After it has run, ``value`` holds what its callable returned and
    ``exception`` what it raised.
    """

    def __init__(self, handle: int, payload: Optional[_Payload]):
        self._handle = handle
        self._owned = True
        self._payload = payload
        self._xq = None

    # -- factories -------------------------------------------------------------------
    @classmethod
    def host_func(cls, fn: Callable, *args, **kwargs) -> "Command":
        """HwCommandCreateHostFunc: ``fn(*args, **kwargs)`` runs on the host in the
        HwQueue's order (the executor thread of a host queue; the runtime's callback
        thread of a GPU stream, where it must not call the GPU runtime)."""
        if not callable(fn):
            raise TypeError("fn must be callable")
        p = _Payload("host function", fn, args, kwargs)
        return cls._make_callback("HwCommandCreateHostFunc", _HOST_TRAMPOLINE, p)

    @classmethod
    def launch_callback(cls, fn: Callable, *args, pass_hwq: bool = False,
                        stream_ctx=None, **kwargs) -> "Command":
        """HwCommandCreateCallback: ``fn(*args, **kwargs)`` (or ``fn(hwq)`` with
        ``pass_hwq=True``, hwq being the HwQueue handle = native stream pointer) is called
        when the command's turn to launch comes, on a library thread; it should enqueue
        its GPU work on that stream and return without waiting for it.

        When the command is submitted to an XQueue made from a ``torch.cuda.Stream``, the
        call runs inside ``torch.cuda.stream(that stream)`` unless ``stream_ctx`` is given
        (a factory of a context manager; ``False`` for none)."""
        if not callable(fn):
            raise TypeError("fn must be callable")
        if pass_hwq and (args or kwargs):
            raise TypeError("pass_hwq=True calls fn(hwq) with no other arguments")
        p = _Payload("launch callback", fn, None if pass_hwq else args, kwargs)
        p.stream_ctx = stream_ctx
        return cls._make_callback("HwCommandCreateCallback", _LAUNCH_TRAMPOLINE, p)

    @classmethod
    def _make_callback(cls, create, trampoline, payload):
        h = HwCommandHandle()
        _registry[payload.token] = payload
        try:
            _call(create, byref(h), trampoline, c_void_p(payload.token))
        except BaseException:
            payload.release()
            raise
        return cls(h.value, payload)

    @classmethod
    def kernel(cls, func, grid, block, args=(), shared_mem_bytes: int = 0,
               module: bool = False, keep=None) -> "Command":
        """HwCommandCreateKernel (``module=True``: HwCommandCreateModuleKernel).

        ``func`` is the kernel's host handle or ``CUfunction``/``hipFunction_t`` (an int
        or c_void_p); ``grid``/``block`` are ints or up to three ints; ``args`` a sequence
        of ctypes values (``c_int(3)``, ``c_void_p(tensor.data_ptr())``...) copied now.
        ``keep`` is held until the command is known complete (e.g. the tensors).
        CUDA: a kernel's host handle is resolved at launch by the process's shared
        libcudart (PyTorch's); a kernel of another runtime (a static cudart) needs its
        ``CUfunction`` and ``module=True``."""
        vals = []
        for a in args:
            if not isinstance(a, ctypes._SimpleCData) and not isinstance(a, Structure):
                raise TypeError("kernel arguments must be ctypes values (c_int(1), "
                                "c_void_p(ptr), ...), not %s" % type(a).__name__)
            vals.append(a)
        n = len(vals)
        argv = (c_void_p * max(n, 1))(*[ctypes.cast(byref(v), c_void_p) for v in vals])
        sizes = (c_size_t * max(n, 1))(*[ctypes.sizeof(v) for v in vals])
        h = HwCommandHandle()
        _call("HwCommandCreateModuleKernel" if module else "HwCommandCreateKernel", byref(h),
              c_void_p(stream_pointer(func)), _dim3(grid), _dim3(block), shared_mem_bytes,
              argv, sizes, n)
        return cls(h.value, _Payload("kernel", keep=keep))

    @classmethod
    def memcpy(cls, dst, src, nbytes: int) -> "Command":
        """HwCommandCreateMemcpy. ``dst``/``src``: pointers (int) or tensors
        (``.data_ptr()``), held until the command is known complete."""
        h = HwCommandHandle()
        _call("HwCommandCreateMemcpy", byref(h), c_void_p(_ptr(dst)), c_void_p(_ptr(src)),
              nbytes)
        return cls(h.value, _Payload("memcpy", keep=(dst, src)))

    @classmethod
    def memset(cls, dst, value: int, nbytes: int) -> "Command":
        """HwCommandCreateMemset: fill ``nbytes`` bytes at ``dst`` with ``value``."""
        h = HwCommandHandle()
        _call("HwCommandCreateMemset", byref(h), c_void_p(_ptr(dst)), value, nbytes)
        return cls(h.value, _Payload("memset", keep=dst))

    @classmethod
    def event_record(cls) -> "Command":
        """HwCommandCreateEventRecord: a marker other XQueues' waits can depend on."""
        h = HwCommandHandle()
        _call("HwCommandCreateEventRecord", byref(h))
        return cls(h.value, _Payload("event record"))

    @classmethod
    def event_wait(cls, record: "Command") -> "Command":
        """HwCommandCreateEventWait: nothing after it runs until ``record`` has run."""
        h = HwCommandHandle()
        _call("HwCommandCreateEventWait", byref(h), record.handle)
        return cls(h.value, _Payload("event wait", keep=record))

    # -- use -------------------------------------------------------------------------
    @property
    def xqueue(self) -> Optional["XQueue"]:
        """The XQueue it was submitted to, or None."""
        return self._xq

    @property
    def ran(self) -> bool:
        """For host-function and launch-callback commands: the callable has been called."""
        return bool(self._payload and self._payload.ran)

    @property
    def value(self):
        """What the callable returned (None before it ran, or for other kinds)."""
        return self._payload.value if self._payload else None

    @property
    def exception(self) -> Optional[BaseException]:
        """What the callable raised, or None."""
        return self._payload.exc if self._payload else None

    def wait(self):
        """XQueueWait on the XQueue it was submitted to; see :meth:`XQueue.wait`."""
        if self._xq is None:
            raise NotAllowedError("the command was not submitted",
                                  code=Result.ERROR_NOT_ALLOWED)
        return self._xq.wait(self)

    def close(self) -> None:
        """HwCommandDestroy. Idempotent. A submitted command still runs."""
        h = self._handle
        if not h:
            return
        self._handle = 0
        p = self._payload
        if p is not None and self._xq is None:
            p.release()  # never submitted: it can never run
        _call("HwCommandDestroy", h)

    def __del__(self):
        try:
            if self._handle:
                self.close()
        except Exception:
            pass

    def __repr__(self):
        what = self._payload.label if self._payload else "command"
        return "<xsched.Command 0x%x %s%s>" % (self._handle, what,
                                                "" if self._handle else " closed")


def _dim3(d) -> XDim3:
    if isinstance(d, XDim3):
        return d
    if isinstance(d, int):
        return XDim3(d, 1, 1)
    d = tuple(d) + (1, 1, 1)
    return XDim3(d[0], d[1], d[2])


def _ptr(x) -> int:
    if isinstance(x, int):
        return x
    if isinstance(x, c_void_p):
        return x.value or 0
    if hasattr(x, "data_ptr"):
        return x.data_ptr()
    raise TypeError("expected a pointer (int), c_void_p or an object with data_ptr()")


def host_func(fn: Callable, *args, **kwargs) -> Command:
    """Shorthand for :meth:`Command.host_func`."""
    return Command.host_func(fn, *args, **kwargs)


def launch_callback(fn: Callable, *args, **kwargs) -> Command:
    """Shorthand for :meth:`Command.launch_callback`."""
    return Command.launch_callback(fn, *args, **kwargs)


# ----------------------------------------------------------------------------------------
# XQueue
# ----------------------------------------------------------------------------------------

class XQueue(_Handle):
    """An XQueue in front of a HwQueue (XQueueCreate).

    ``hwq`` is a :class:`HwQueue`, or a stream object (``torch.cuda.Stream``; a CudaQueue
    or HipQueue is then made and owned, and closed with the XQueue). ``level`` defaults to
    Lv1 (:attr:`PreemptLevel.BLOCK`); ``"max"`` picks the highest the HwQueue supports.
    ``priority``, ``threshold`` and ``batch_size`` are applied after creation when given,
    and ``objective`` (a latency objective, :attr:`objective`).

    ``close()`` (XQueueDestroy) drains: every submitted command still runs.
    """

    def __init__(self, hwq, level=PreemptLevel.BLOCK, flags: int = 0,
                 priority: Optional[int] = None, threshold: Optional[int] = None,
                 batch_size: Optional[int] = None, objective: Optional[float] = None):
        _flush_deferred()
        self._own_hwq = False
        if not isinstance(hwq, HwQueue):
            hwq = hw_queue_for(hwq)
            self._own_hwq = True
        self.hwq = hwq
        self._outstanding = {}   # token -> _Payload of submitted, not known complete
        self._errors = collections.deque(maxlen=256)  # callback exceptions, for wait_all
        self._suspend_depth = 0
        self._suspend_lock = threading.Lock()
        self._priority = PRIORITY_DEFAULT
        self._objective = 0.0
        try:
            if level == "max":
                level = hwq.max_preempt_level
            h = XQueueHandle()
            _call("XQueueCreate", byref(h), hwq.handle, int(level), int(flags))
        except BaseException:
            if self._own_hwq:
                hwq.close()
            raise
        self._handle = h.value
        self._owned = True
        _live_xqueues.add(self)
        try:
            if priority is not None:
                self.priority = priority
            if threshold is not None or batch_size is not None:
                self.set_launch_config(threshold or 0, batch_size or 0)
            if objective is not None:
                self.objective = objective
        except BaseException:
            self.close()
            raise

    @classmethod
    def attach(cls, handle: int, hwq: Optional[HwQueue] = None) -> "XQueue":
        """Wrap an XQueue made elsewhere (e.g. by C code) without owning it."""
        self = cls.__new__(cls)
        self._own_hwq = False
        self.hwq = hwq
        self._outstanding = {}
        self._errors = collections.deque(maxlen=256)
        self._suspend_depth = 0
        self._suspend_lock = threading.Lock()
        self._priority = PRIORITY_DEFAULT
        self._objective = 0.0
        self._handle = int(handle)
        self._owned = False
        return self

    @classmethod
    def of(cls, hwq: HwQueue) -> "XQueue":
        """XQueueGet: the XQueue made on ``hwq`` (a non-owning wrapper)."""
        h = XQueueHandle()
        _call("XQueueGet", byref(h), hwq.handle)
        return cls.attach(h.value, hwq)

    # -- configuration -----------------------------------------------------------------
    @property
    def priority(self) -> int:
        """The priority last set through this object (XHintPriority; HPF: higher runs)."""
        return self._priority

    @priority.setter
    def priority(self, prio: int) -> None:
        self._check_open()
        _call("XHintPriority", self._handle, int(prio))
        self._priority = int(prio)

    @property
    def objective(self) -> float:
        """The latency objective last set through this object (XHintLatencyObjective): the
        slowdown the p99 of its units (commands, or whole scopes) may suffer against running
        alone, e.g. 1.2; 0.0 = none. The
        engine sizes its device's pacing slices and co-run budget to meet it with as much
        lower-priority work as possible (``XSCHED_PACE=0``: co-run budgets only);
        ``stats().slowdown``, ``stats().pace_eighths`` and ``stats().corun_budget_ns`` show
        the result. The queue's units may then be slower on average by up to the objective:
        above 1 / (its busy share alone) its requests may queue where no unit sees them.
        Setting 0 clears it; a value below 1.0 (not 0), NaN or infinite raises
        :class:`InvalidValueError`."""
        return self._objective

    @objective.setter
    def objective(self, max_slowdown: float) -> None:
        self._check_open()
        _call("XHintLatencyObjective", self._handle, float(max_slowdown))
        self._objective = float(max_slowdown)

    def hint_utilization(self, percent: int) -> None:
        """XHintUtilization (UP policy), when the library has it."""
        _call("XHintUtilization", self._handle, int(percent))

    def hint_deadline(self, deadline_us: int) -> None:
        """XHintDeadline (EDF policies), relative deadline in us, when the library has it."""
        _call("XHintDeadline", self._handle, int(deadline_us))

    def hint_laxity(self, laxity_us: int, lax_prio: int, crit_prio: int) -> None:
        """XHintLaxity (LAX policy), when the library has it."""
        _call("XHintLaxity", self._handle, int(laxity_us), int(lax_prio), int(crit_prio))

    @property
    def preempt_level(self) -> PreemptLevel:
        """XQueueGetPreemptLevel / XQueueSetPreemptLevel."""
        v = c_int64()
        _call("XQueueGetPreemptLevel", self._handle, byref(v))
        return PreemptLevel(v.value)

    @preempt_level.setter
    def preempt_level(self, level: int) -> None:
        _call("XQueueSetPreemptLevel", self._handle, int(level))

    @property
    def launch_config(self) -> tuple:
        """(threshold, batch_size) of progressive launching."""
        t, b = c_int64(), c_int64()
        _call("XQueueGetLaunchConfig", self._handle, byref(t), byref(b))
        return t.value, b.value

    def set_launch_config(self, threshold: int = 0, batch_size: int = 0) -> None:
        """XQueueSetLaunchConfig; a value <= 0 keeps the current one."""
        _call("XQueueSetLaunchConfig", self._handle, int(threshold), int(batch_size))

    # -- submission --------------------------------------------------------------------
    def submit(self, cmd: Command) -> Command:
        """XQueueSubmit. Returns ``cmd``. The command may be closed (or dropped) right
        after: it still runs (submit-and-forget)."""
        if not isinstance(cmd, Command):
            raise TypeError("expected an xsched.Command")
        self._check_open()
        p = cmd._payload
        if p is not None and p.kind == "launch callback" and p.stream_ctx is None \
                and self.hwq is not None:
            p.stream_ctx = self.hwq.stream_ctx
        if p is not None and p.stream_ctx is False:
            p.stream_ctx = None
        if p is not None and not p.ran:
            p.xq_handle = self._handle  # read by the callback, which may run at once
            p.xq_ref = weakref.ref(self)
        try:
            _call("XQueueSubmit", self._handle, cmd.handle)
        except BaseException:
            if p is not None and not p.ran:
                p.xq_handle, p.xq_ref = 0, None
            raise
        cmd._xq = self
        # Tracked only once accepted, so that a wait_all() in another thread releases
        # only what the library's XQueueWaitAll covers. A callback that already ran has
        # released itself.
        if p is not None and not p.ran:
            self._outstanding[p.token] = p
            if p.ran:  # ran meanwhile
                self._outstanding.pop(p.token, None)
        return cmd

    def submit_callable(self, fn: Callable, *args, **kwargs) -> Command:
        """Make and submit a launch-callback command running ``fn(*args, **kwargs)`` when
        the scheduler lets this XQueue launch. On an XQueue made from a torch stream the
        call runs with that stream current, so PyTorch work (a model's forward, a CUDA
        graph's ``replay()``) is enqueued on it and covered by the command's completion."""
        return self.submit(Command.launch_callback(fn, *args, **kwargs))

    def submit_host_func(self, fn: Callable, *args, **kwargs) -> Command:
        """Make and submit a host-function command running ``fn(*args, **kwargs)``."""
        return self.submit(Command.host_func(fn, *args, **kwargs))

    def launch_inline(self, fn: Callable, *args, **kwargs):
        """Run ``fn(*args, **kwargs)`` on this thread as one command of this XQueue
        (XQueueLaunchInline) and return its value.

        The call waits, with the GIL released, until the XQueue may launch its next
        command (not while it is suspended at Lv1 or by :meth:`suspend`, nor while its
        window is full), then runs ``fn`` here: GPU work ``fn`` puts on the XQueue's
        stream (the current stream must be it: see :meth:`running`) sits behind the
        command's gate at Lv2 and is followed by its done mark. Returns without waiting
        for the GPU. An exception of ``fn`` is re-raised here, and the command counts as
        successful (it enqueued what it enqueued). :class:`NotAllowedError` from a
        callback of this XQueue itself."""
        self._check_open()
        op = _InlineOp(fn, args, kwargs)
        stack = getattr(_tls, "inline", None)
        if stack is None:
            stack = _tls.inline = []
        stack.append(op)
        try:
            res = _C.XQueueLaunchInline(self._handle, _INLINE_TRAMPOLINE, None)
        finally:
            stack.pop()
        if op.exc is not None:
            raise op.exc
        if res != 0:
            raise error_for(res, "XQueueLaunchInline")
        return op.value

    def running(self, per_operator: bool = True, ops_per_command: int = 1,
                per_module=False) -> "Scope":
        """A scope that runs eager PyTorch code on this thread under this XQueue::

            with xq.running():
                loss = model(x)
                loss.backward()

        Inside it this XQueue counts as having work (XQueueBeginScope: HPF keeps
        lower-priority XQueues suspended between its operators) and the XQueue's stream
        is the current torch stream (it first waits for the stream that was current).
        With ``per_operator`` the operators that launch GPU work become commands of this
        XQueue (:meth:`launch_inline`): every ``ops_per_command``-th one is a command,
        with its gate in front, and the operators after it up to the next command run
        behind it on the stream, so a suspension stops the stream within
        ``ops_per_command`` operators, and the thread blocks in C, GIL released, while the
        XQueue may not launch. Operators of the autograd engine's threads (``backward()``)
        go the same way. Without ``per_operator`` the scope's work is one command, closed
        on exit: cheaper, for an XQueue nothing preempts (the top priority).

        With ``per_module`` (instead of ``per_operator``) a boundary command
        (XQueueLaunchInline with no launch: a gate and a done mark) goes on the stream
        before every ``ops_per_command``-th leaf ``torch.nn`` module that starts on this
        thread, and before the backward of such a module's output (a pre-hook of its
        autograd node); the module's operators run natively behind it, with no Python
        hook per operator. A suspension then stops the stream at the next module
        boundary, and each boundary's done mark follows the work before it. Much cheaper
        than operator scopes (doc/python.md has both costs); work outside modules (the
        optimizer step, functional code) runs behind the last boundary. Pass the model
        (``per_module=net``) to hook only its leaf modules (once; the hooks stay on it):
        with ``True``, process-wide module hooks are installed while the scope is open,
        and every module call in the process (other threads' models too) pays PyTorch's
        slower path with hooks meanwhile.

        Leaving the scope does not wait for the GPU and adds no cross-stream wait: as
        with ``torch.cuda.stream``, synchronize with the XQueue's stream before using its
        results on another stream (``torch.cuda.current_stream().wait_stream(s)``). See
        doc/python.md ("Operator scopes") for the costs."""
        if int(ops_per_command) < 1:
            raise ValueError("ops_per_command must be >= 1")
        kind = "module" if per_module is not False and per_module is not None else \
            "op" if per_operator else "whole"
        model = per_module if kind == "module" and per_module is not True else None
        return Scope(self, kind, int(ops_per_command), model)

    def unit(self) -> "Unit":
        """One unit of this XQueue's latency objective (XQueueBeginUnit ..
        XQueueEndUnit): a decode step, a denoising step, a request::

            with xq.running(per_operator=False):  # the request
                for _ in range(steps):
                    with xq.unit():                # one decode step
                        graph.replay()
                    tokens.cpu()                   # the host reads the token

        The objective (``objective=``) is then stated on the units: a time-per-token
        objective. Entering opens the unit's *pacing slice*, in which lower-priority XQueues
        run commands predicted to end within it (at most its share of the slack: level/8 x
        (objective - 1) x its time alone), beside the unit (with ``XSCHED_PACE_WAIT=1``
        entering blocks, GIL released, until the slice is over); leaving submits a boundary
        whose completion ends the unit, without waiting for the GPU. Do the unit's work on
        this XQueue's stream (inside ``running()``, or a launch-callback command). Units do
        not nest. doc/architecture.md ("Pacing") says how the slack is spent."""
        return Unit(self)

    def capture(self, graph, **kwargs):
        """``torch.cuda.graph(graph, stream=<this XQueue's stream>, **kwargs)`` once the
        library has set the stream's hardware priority for this XQueue (the greatest when
        it is of its device's top priority): PyTorch instantiates graphs with the node
        priorities of their capture, so a priority set on the stream after capture never
        reaches the replays. Waits up to 0.2 s for the scheduler's pass (it runs when an
        XQueue is made or a hint changes); a stream whose priority the library does not
        set (``XSCHED_HW_PRIORITY=0``, ROCm) is captured as it is::

            g = torch.cuda.CUDAGraph()
            with xq.capture(g):
                step()
        """
        import torch
        stream = getattr(self.hwq, "stream", None)
        if stream is None:
            raise ValueError("capture(): the XQueue wraps no torch stream")
        deadline = time.monotonic() + 0.2
        while self.stats().hw_priority == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        return torch.cuda.graph(graph, stream=stream, **kwargs)

    def gate_checks(self) -> "Scope":
        """A scope for capturing a CUDA graph on this XQueue's stream that stays
        preemptible per operator when replayed: before each operator it enqueues a check
        of the XQueue's run gate (XQueueEnqueueGateCheck), so a replay (one command, e.g.
        ``xq.submit_callable(g.replay)``) stops at the next check while the XQueue is
        suspended. Use inside ``torch.cuda.graph(g, stream=s)`` with ``s`` the XQueue's
        stream. Needs Lv2 (:class:`NotSupportedError` otherwise)."""
        return Scope(self, "gate")

    # -- waiting -----------------------------------------------------------------------
    def _no_self_wait(self, what):
        if _in_callback_of(self._handle):
            raise NotAllowedError("%s from a callback of the same XQueue would wait for "
                                  "itself" % what, code=Result.ERROR_NOT_ALLOWED)

    def wait(self, cmd: Command):
        """XQueueWait: block (GIL released) until ``cmd`` has completed.

        Returns what its callable returned; re-raises what it raised; raises the
        :class:`XSchedError` subclass for any other error result."""
        self._check_open()
        self._no_self_wait("wait()")
        if not cmd.handle:
            raise NotFoundError("the command is closed", code=Result.ERROR_NOT_FOUND)
        res = _C.XQueueWait(self._handle, cmd.handle)
        p = cmd._payload
        if p is not None and cmd._xq is self and res != Result.ERROR_NOT_FOUND \
                and res != Result.ERROR_INVALID_VALUE:
            p.release()  # complete: it will not run again and its buffers are free
            self._outstanding.pop(p.token, None)
        if res != 0:
            if p is not None and p.exc is not None:
                raise p.exc
            raise error_for(res, "XQueueWait")
        return p.value if p is not None else None

    def wait_all(self) -> None:
        """XQueueWaitAll: block until every command submitted before the call completed.
        Raises if one of the commands the call covers failed (those submitted before it,
        less those covered by the wait_all calls that had returned when it was made; every
        caller waiting on them at once raises): the first exception a callback raised
        that no wait_all raised yet, else the error class of the first failure."""
        self._check_open()
        self._no_self_wait("wait_all()")
        before = self._outstanding.copy()
        res = _C.XQueueWaitAll(self._handle)
        for tok, p in before.items():
            p.release()
            self._outstanding.pop(tok, None)
        if res != 0:
            errs = list(self._errors)
            self._errors.clear()
            if errs:
                raise errs[0]
            raise error_for(res, "XQueueWaitAll")
        # Success: no command it covers failed; an exception seen meanwhile is a later
        # command's, for the next wait_all.

    def query(self) -> QueueState:
        """XQueueQuery."""
        v = c_int()
        _call("XQueueQuery", self._handle, byref(v))
        return QueueState(v.value)

    @property
    def idle(self) -> bool:
        """Every submitted command has completed (may be stale when read)."""
        return self.query() == QueueState.IDLE

    # -- suspension --------------------------------------------------------------------
    def suspend(self, sync: bool = False) -> None:
        """XQueueSuspend (application-managed). ``sync=True``: return once launched
        commands have completed (Lv1 only). Not counted: one resume() undoes any number."""
        _call("XQueueSuspend", self._handle,
              int(QueueSuspendFlag.SYNC_HWQUEUE if sync else 0))

    def resume(self) -> None:
        """XQueueResume."""
        _call("XQueueResume", self._handle, 0)

    @contextmanager
    def suspended(self, sync: bool = False):
        """Suspend for the duration of a ``with`` block. Nested blocks (from any thread)
        resume only when the outermost ends."""
        with self._suspend_lock:
            if self._suspend_depth == 0:
                self.suspend(sync)
            self._suspend_depth += 1
        try:
            yield self
        finally:
            with self._suspend_lock:
                self._suspend_depth -= 1
                if self._suspend_depth == 0 and self._handle:
                    self.resume()

    # -- statistics --------------------------------------------------------------------
    def stats(self) -> QueueStats:
        """XQueueGetStats."""
        s = XQueueStats()
        _call("XQueueGetStats", self._handle, byref(s))
        return QueueStats.from_c(s)

    def board(self) -> BoardInfo:
        """XQueueGetBoard: the board shared with other processes on the XQueue's device."""
        b = XBoardInfo()
        _call("XQueueGetBoard", self._handle, byref(b))
        return BoardInfo.from_c(b)

    def command_count(self) -> int:
        """XQueueProfileHwCommandCount: commands submitted so far."""
        v = c_int64()
        _call("XQueueProfileHwCommandCount", self._handle, byref(v))
        return v.value

    # -- teardown ----------------------------------------------------------------------
    def close(self) -> None:
        """XQueueDestroy: drain (every submitted command runs), stop the XQueue's threads,
        then close an owned HwQueue. Idempotent. Not from a callback of this XQueue."""
        h = self._handle
        if not h:
            return
        self._no_self_wait("close()")
        try:
            if self._owned:
                _call("XQueueDestroy", h)
        finally:
            self._handle = 0
            for p in list(self._outstanding.values()):
                p.release()
            self._outstanding.clear()
            if self._own_hwq and self.hwq is not None:
                self.hwq.close()
        _flush_deferred()

    def __repr__(self):
        return "<xsched.XQueue 0x%x on %r%s>" % (self._handle, self.hwq,
                                                 "" if self._handle else " closed")


# ----------------------------------------------------------------------------------------
# Scheduler
# ----------------------------------------------------------------------------------------

# ----------------------------------------------------------------------------------------
# Operator scopes (eager PyTorch): XQueue.running(), XQueue.gate_checks()
# ----------------------------------------------------------------------------------------

def _op_is_free(func, cache={}):
    """Whether an ATen operator launches no device work (views, allocation, metadata), so
    that it needs no command. Decided once per operator from its schema."""
    v = cache.get(func)
    if v is None:
        name = getattr(func, "__name__", "")
        base = name.split(".")[0]
        v = base in _FREE_OPS
        schema = getattr(func, "_schema", None)
        if not v and schema is not None:
            # A view returns an alias of an input that it does not write.
            v = any(r.alias_info is not None and not r.alias_info.is_write
                    for r in schema.returns)
        cache[func] = v
    return v


_FREE_OPS = frozenset([
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "detach",
    "detach_", "alias", "lift_fresh", "lift_fresh_copy", "set_", "resize_", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_has_same_storage_numel",
])


def _make_mode_class():
    from torch.utils._python_dispatch import TorchDispatchMode

    class _XQueueMode(TorchDispatchMode):
        """Routes each operator dispatched on this thread (and on the autograd threads
        that run its backward) to the innermost scope's XQueue."""

        def __init__(self, stack):
            super().__init__()
            self.stack = stack  # the owning thread's scopes, innermost last

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            scope = self.stack[-1] if self.stack else None
            if scope is None or scope.kind in ("whole", "module") or _op_is_free(func):
                return func(*args, **kwargs)  # the innermost scope is not per operator
            if scope.kind == "gate":
                _call("XQueueEnqueueGateCheck", scope.xq._handle)
                return func(*args, **kwargs)
            n = scope.count
            scope.count = n + 1
            if n % scope.every:
                return func(*args, **kwargs)  # behind the last command's operator
            return scope.xq.launch_inline(func, *args, **kwargs)

    return _XQueueMode


_mode_class = None


class Unit:
    """What :meth:`XQueue.unit` returns: a context manager for one unit of the XQueue's
    latency objective (XQueueBeginUnit on entry, XQueueEndUnit on exit, also when the body
    raises)."""

    def __init__(self, xq: "XQueue"):
        self.xq = xq

    def __enter__(self):
        self.xq._check_open()
        _call("XQueueBeginUnit", self.xq._handle)
        return self

    def __exit__(self, *exc):
        if self.xq._handle:
            res = _C.XQueueEndUnit(self.xq._handle)
            if res != 0 and exc[0] is None:
                raise error_for(res, "XQueueEndUnit")
        return False


class Scope:
    """What :meth:`XQueue.running` and :meth:`XQueue.gate_checks` return: a context
    manager for one thread, re-entrant, nestable with other XQueues' scopes (the innermost
    wins). Leaving it does not wait for the GPU: the work goes on and completes as
    commands of the XQueue (:meth:`XQueue.wait_all`)."""

    def __init__(self, xq: "XQueue", kind, ops_per_command=1, model=None):
        self.xq = xq
        self.kind = kind  # "op", "module", "whole" or "gate"
        self.model = model  # module scopes: the model whose leaves count, or None: all
        self.every = ops_per_command
        self.count = 0  # operators (or modules) seen, by every thread of the scope
        self.bw_count = 0  # module scopes: backward boundaries seen (autograd threads)
        self._saved = []  # per entry: (torch stream context, mode it entered)
        self.bw_hook = self._backward_boundary if kind == "module" else None

    def boundary(self):
        """A boundary command on this scope's XQueue (XQueueLaunchInline with no launch):
        blocks (GIL released) while the XQueue may not launch; what follows on its stream
        sits behind it."""
        res = _C.XQueueLaunchInline(self.xq._handle, _NO_LAUNCH, None)
        if res != 0:
            raise error_for(res, "XQueueLaunchInline")

    def _module_started(self):
        n = self.count
        self.count = n + 1
        if n % self.every == 0:
            self.boundary()

    def _backward_boundary(self, grad_outputs):
        # An autograd node's pre-hook, on the thread that runs the backward.
        n = self.bw_count
        self.bw_count = n + 1
        if n % self.every == 0 and self.xq._handle:
            self.boundary()
        return None

    def __enter__(self):
        global _mode_class
        xq = self.xq
        xq._check_open()
        state = getattr(_tls, "scopes", None)
        if state is None:
            state = _tls.scopes = [[], None]  # [stack, mode]
        stack, mode = state
        if self.kind != "gate":
            _call("XQueueBeginScope", xq._handle)
        stream_ctx = None
        try:
            torch = sys.modules.get("torch")
            stream = getattr(xq.hwq, "stream", None)
            if self.kind == "gate" and torch is not None and stream is not None and \
                    torch.cuda.current_stream().cuda_stream != stream_pointer(stream):
                raise ValueError("gate_checks(): capture on the XQueue's stream "
                                 "(torch.cuda.graph(g, stream=s))")
            if self.kind != "gate" and torch is not None and stream is not None and \
                    getattr(xq.hwq, "stream_ctx", None):
                prev = torch.cuda.current_stream()
                stream.wait_stream(prev)  # inputs made on the outer stream come first
                stream_ctx = torch.cuda.stream(stream)
                stream_ctx.__enter__()
            new_mode = None
            global_hooks = False
            if self.kind == "module" and torch is not None:
                if self.model is not None:
                    _hook_model(self.model)
                else:
                    _global_hooks_acquire(torch)
                    global_hooks = True
            elif self.kind not in ("whole", "module") and mode is None and torch is not None:
                if _mode_class is None:
                    _mode_class = _make_mode_class()
                new_mode = _mode_class(stack)
                new_mode.__enter__()
                state[1] = new_mode
            stack.append(self)
        except BaseException:
            if stream_ctx is not None:
                stream_ctx.__exit__(None, None, None)
            if self.kind != "gate":
                _C.XQueueEndScope(xq._handle)
            raise
        self._saved.append((stream_ctx, new_mode, global_hooks))
        return self

    def __exit__(self, *exc):
        stream_ctx, new_mode, global_hooks = self._saved.pop()
        state = _tls.scopes
        stack = state[0]
        stack.pop()
        try:
            if new_mode is not None:
                state[1] = None
                new_mode.__exit__(*exc)
            if self.kind in ("whole", "module") and self.xq._handle:
                # A done mark after the scope's work: the XQueue stays busy until the
                # GPU has finished it (module scopes: the last module's work).
                self.boundary()
        finally:
            if global_hooks:
                _global_hooks_release()
            if stream_ctx is not None:
                stream_ctx.__exit__(*exc)
            if self.kind != "gate" and self.xq._handle:
                _C.XQueueEndScope(self.xq._handle)
        return False


# Module scopes. With a model given, a pre-hook and a hook on each of its leaf modules (no
# children: a container's work is its children's), registered once and kept; they return
# at once on threads without a module scope. Without one, the two process-wide torch.nn
# module hooks, installed while any such scope is open: every module call of the process
# then takes PyTorch's slower path with hooks (about 4 us per call measured on the 2-core
# development machine), so they are removed when the last one closes.
_global_hooks = None  # (pre, post) handles, under _global_hooks_lock
_global_scopes = 0    # open module scopes without a model, under _global_hooks_lock
_global_hooks_lock = threading.Lock()
_hooked_models = weakref.WeakKeyDictionary()  # model -> its hook handles
_hooked_leaves = weakref.WeakSet()            # leaves of those: the global hooks skip them


def _global_hooks_acquire(torch):
    global _global_hooks, _global_scopes
    with _global_hooks_lock:
        if _global_hooks is None:
            m = torch.nn.modules.module
            _global_hooks = (m.register_module_forward_pre_hook(_global_pre_hook),
                             m.register_module_forward_hook(_global_post_hook))
        _global_scopes += 1


def _global_hooks_release():
    global _global_hooks, _global_scopes
    with _global_hooks_lock:
        _global_scopes -= 1
        if _global_scopes == 0 and _global_hooks is not None:
            for h in _global_hooks:
                h.remove()
            _global_hooks = None


def _hook_model(model):
    if model in _hooked_models:
        return
    handles = []
    for m in model.modules():
        if not m._modules:
            handles.append(m.register_forward_pre_hook(_module_pre_hook))
            handles.append(m.register_forward_hook(_module_post_hook))
            _hooked_leaves.add(m)
    _hooked_models[model] = handles


def _global_pre_hook(module, args):
    if module not in _hooked_leaves:
        _module_pre_hook(module, args)


def _global_post_hook(module, args, output):
    if module not in _hooked_leaves:
        _module_post_hook(module, args, output)


def _module_scope():
    state = getattr(_tls, "scopes", None)
    if state is None or not state[0]:
        return None
    s = state[0][-1]
    return s if s.kind == "module" else None


def _module_pre_hook(module, args):
    if not module._modules:  # a leaf
        s = _module_scope()
        if s is not None:
            s._module_started()
    return None


def _module_post_hook(module, args, output):
    # The module's backward starts at the autograd node that made its output: a boundary
    # there too (a pre-hook of that node, run by the autograd engine's thread).
    if module._modules:
        return None
    s = _module_scope()
    if s is None:
        return None
    t = output
    if isinstance(t, (tuple, list)):
        t = next((x for x in t if getattr(x, "grad_fn", None) is not None), None)
    fn = getattr(t, "grad_fn", None)
    if fn is not None:
        fn.register_prehook(s.bw_hook)
    return None


@contextmanager
def trace(path):
    """Record a timeline trace while the block runs and write it to ``path`` at its end
    (XSchedTraceStart/XSchedTraceStop): Chrome trace-event JSON for ui.perfetto.dev or
    chrome://tracing, one track per XQueue, a slice per command from commit to completion,
    instant events for submissions, suspensions, hints and the scheduler's passes. Raises
    :class:`NotAllowedError` if a trace runs already (XSCHED_TRACE included)."""
    _call("XSchedTraceStart", os.fsencode(path))
    try:
        yield path
    finally:
        _call("XSchedTraceStop")


def set_scheduler(scheduler: int = Scheduler.LOCAL,
                  policy: int = Policy.HIGHEST_PRIORITY_FIRST) -> None:
    """XHintSetScheduler: ``Scheduler.LOCAL`` with a policy (HPF by default), or
    ``Scheduler.APP_MANAGED`` (no scheduler thread; use suspend()/resume())."""
    _call("XHintSetScheduler", int(scheduler), int(policy))


def set_timeslice(us: int) -> None:
    """XHintTimeslice (time-slice policies), when the library has it."""
    _call("XHintTimeslice", int(us))


def set_k_deadline(k: int) -> None:
    """XHintKDeadline: how many queues KEDF runs at once, when the library has it."""
    _call("XHintKDeadline", int(k))


def set_commit_budget(us: int) -> None:
    """XHintCommitBudget: how much lower-priority work, in estimated device time (us), a
    device may hold committed (every policy; default XSCHED_BUDGET_US or 1000)."""
    _call("XHintCommitBudget", int(us))


def set_corun_budget(us: int) -> None:
    """XHintCorunBudget: how much lower-priority work, in estimated device time (us), a
    device keeps committed while a top-priority XQueue has work under HPF (co-run); 0 =
    none, and HPF then suspends the lower queues (default XSCHED_CORUN_US or 0)."""
    _call("XHintCorunBudget", int(us))


def set_strict_priority(strict: bool) -> None:
    """XHintStrictPriority: whether priorities below each device's top one are strict
    (True: a busy middle priority keeps the lower ones from running) or share the
    commitment budget by weight (False, the default: about 4/5 to 1/5 between two)."""
    _call("XHintStrictPriority", 1 if strict else 0)


def shutdown() -> None:
    """XSchedShutdown: stop the scheduler thread (queues it suspended are resumed)."""
    _call("XSchedShutdown")


def _live_counts() -> dict:
    """Python-side bookkeeping sizes (for leak tests)."""
    return {"registry": len(_registry),
            "xqueues": sum(1 for q in list(_live_xqueues) if q.handle),
            "hwqueues": sum(1 for q in list(_live_hwqueues) if q.handle),
            "deferred": len(_deferred)}


@atexit.register
def _at_exit():
    # Drain and destroy what Python still owns while the interpreter can still run the
    # callbacks: after finalization a library thread calling into Python would be stopped.
    _flush_deferred()
    for xq in list(_live_xqueues):
        try:
            xq.close()
        except Exception:
            pass
    for q in list(_live_hwqueues):
        try:
            q.close()
        except Exception:
            pass
    try:
        _C.XSchedShutdown()
    except Exception:
        pass
