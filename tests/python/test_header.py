"""The Python binding against include/xsched.h, derived from the header (as
.ci/check-symbols.sh does for the exported symbols), so that a call, an enum value or a
constant added to the header and not to bindings/python/xsched.py fails here:

- every XSCHED_API function returns XResult and has a prototype in ``_PROTOTYPES`` with
  the same number of arguments, each of the matching ctypes type, and the binding has no
  prototype the header lacks; one that returns a string (XResultName) has its prototype in
  ``_STRING_PROTOTYPES`` instead;
- every enum of the header has its class in the binding (named in the class's docstring,
  else X + the class name) with the same members and values (sentinels ``*Max`` and
  ``*MaskAll`` may be left out); the C names the binding gives errors are the header's;
- the integer constants (``#define NAME 123``) and the version match;
- the structs the binding copies have the header's fields, in order, with their types.

Runs on the host backend (the binding loads the library on import). Run alone
(``python3 tests/python/test_header.py``) or with pytest.
"""
import ctypes
import enum
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))

import xsched  # noqa: E402

HEADER = os.path.join(ROOT, "include", "xsched.h")

# C's own integer types; every other type name is resolved through the header.
_BASE = {"int": ctypes.c_int, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
         "uint8_t": ctypes.c_uint8, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
         "size_t": ctypes.c_size_t, "double": ctypes.c_double}


def _source():
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


class Header:
    """What the binding copies from the header, parsed with regular expressions."""

    def __init__(self):
        src = _source()
        self.scalars = dict((n, t) for t, n in re.findall(r"typedef\s+(\w+)\s+(\w+)\s*;", src))
        self.enums = {}
        for body, name in re.findall(r"typedef\s+enum\s*\{(.*?)\}\s*(\w+)\s*;", src, re.S):
            values, nxt = {}, 0
            for item in filter(None, (i.strip() for i in body.split(","))):
                m = re.fullmatch(r"(\w+)(?:\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+)))?", item)
                assert m, "cannot read enum item %r of %s" % (item, name)
                nxt = int(m.group(2), 0) if m.group(2) else nxt
                values[m.group(1)] = nxt
                nxt += 1
            self.enums[name] = values
        self.structs = {}
        for body, name in re.findall(r"typedef\s+struct\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;", src,
                                     re.S):
            fields = []
            for decl in filter(None, (d.strip() for d in body.split(";"))):
                ctype, names = decl.split(None, 1)
                fields += [(n.strip(), ctype) for n in names.split(",")]
            self.structs[name] = fields
        self.callbacks = {n: _split(a) for n, a in re.findall(
            r"typedef\s+\w+\s*\(\s*\*\s*(\w+)\s*\)\s*\((.*?)\)\s*;", src, re.S)}
        self.functions = {}
        for ret, stars, name, args in re.findall(
                r"XSCHED_API\s+((?:\w+\s+)*?\w+)(\s+|\s*\*+\s*)(\w+)\s*\((.*?)\)\s*;", src, re.S):
            self.functions[name] = ((ret + " " + stars.strip()).strip(), _split(args))
        self.defines = {n: int(v, 0) for n, v in re.findall(
            r"^#define\s+(\w+)\s+(-?(?:0x[0-9a-fA-F]+|\d+))\s*$", src, re.M)}

    def ctype(self, decl):
        """The ctypes type of a parameter declaration such as ``const size_t *sizes``, as
        (base type, pointer levels around it)."""
        decl = re.sub(r"\bconst\b", " ", decl)
        m = re.fullmatch(r"\s*(\w+)\s*(\**)\s*\w*\s*", decl)
        assert m, "cannot read parameter %r" % decl
        base, stars = m.group(1), len(m.group(2))
        if base == "void" and stars:
            t, stars = ctypes.c_void_p, stars - 1
        elif base == "char" and stars:
            t, stars = ctypes.c_char_p, stars - 1
        else:
            t = self.base(base)
        return t, stars

    def base(self, name):
        while name in self.scalars:
            name = self.scalars[name]
        if name in _BASE:
            return _BASE[name]
        if name in self.enums:
            return ctypes.c_int
        if name in self.structs or name in self.callbacks:
            return name  # compared by name: the binding's class of the same C type
        raise AssertionError("type %s is not in the header" % name)


def _split(args):
    args = " ".join(args.split())
    return [] if args in ("", "void") else [a.strip() for a in args.split(",")]


def _same(header, want, got, what, stars=0):
    """Assert that ctypes type @got is the header's @want (a ctypes type, or the name of
    a struct or callback typedef) behind @stars pointer levels."""
    for _ in range(stars):
        assert isinstance(got, type) and issubclass(got, ctypes._Pointer), \
            "%s: a pointer in the header, %s in the binding" % (what, got)
        got = got._type_
    if isinstance(want, str):
        if want in header.callbacks:
            assert getattr(got, "_argtypes_", None) is not None, \
                "%s: %s is a function pointer, the binding has %s" % (what, want, got)
            n = len(header.callbacks[want])
            assert len(got._argtypes_) == n, "%s: %s takes %d arguments, the binding's %d" % (
                what, want, n, len(got._argtypes_))
            return
        assert getattr(got, "__name__", None) == want, "%s: header %s, binding %s" % (
            what, want, got)
        return
    assert got is want, "%s: header %s, binding %s" % (what, want.__name__,
                                                       getattr(got, "__name__", got))


def test_prototypes():
    h = Header()
    assert len(h.functions) >= 40, "found only %d XSCHED_API functions" % len(h.functions)
    strings = {n: f for n, f in h.functions.items() if f[0] == "const char *"}
    assert "XResultName" in strings, sorted(h.functions)
    assert sorted(strings) == sorted(xsched._STRING_PROTOTYPES), \
        "functions returning a string: header %s, binding %s" % (
            sorted(strings), sorted(xsched._STRING_PROTOTYPES))
    for name, (ret, args) in sorted(strings.items()):
        got = xsched._STRING_PROTOTYPES[name]
        assert len(got) == len(args), name
        for i, (decl, t) in enumerate(zip(args, got)):
            want, stars = h.ctype(decl)
            _same(h, want, t, "%s argument %d (%s)" % (name, i + 1, decl), stars)
        del h.functions[name]
    protos = xsched._PROTOTYPES
    missing = sorted(set(h.functions) - set(protos))
    assert not missing, "in include/xsched.h, not in xsched.py's _PROTOTYPES: %s" % missing
    extra = sorted(set(protos) - set(h.functions))
    assert not extra, "in _PROTOTYPES, not in include/xsched.h: %s" % extra
    for name, (ret, args) in sorted(h.functions.items()):
        assert ret == "XResult", "%s returns %s; the binding assumes XResult" % (name, ret)
        got = protos[name]
        assert len(got) == len(args), "%s takes %d arguments in the header, %d in the " \
            "binding" % (name, len(args), len(got))
        for i, (decl, t) in enumerate(zip(args, got)):
            want, stars = h.ctype(decl)
            _same(h, want, t, "%s argument %d (%s)" % (name, i + 1, decl), stars)
    # What the loader set on the library's functions is what _PROTOTYPES says.
    for name in h.functions:
        f = getattr(xsched._C, name)
        if not getattr(f, "missing", False):
            assert list(f.argtypes) == list(protos[name]) and f.restype is ctypes.c_int, name


def _prefix(names):
    p = os.path.commonprefix(names)
    while p and not all(len(n) > len(p) and n[len(p)].isupper() for n in names):
        p = p[:-1]
    return p


def _binding_enums():
    out = {}
    for obj in vars(xsched).values():
        if isinstance(obj, type) and issubclass(obj, enum.Enum) and \
                obj.__module__ == xsched.__name__:
            doc = (obj.__doc__ or "").split()
            cname = doc[0].rstrip(".") if doc and doc[0].startswith("X") else "X" + obj.__name__
            out[cname] = obj
    return out


def test_enums():
    h = Header()
    assert "XResult" in h.enums and "XPolicyType" in h.enums, sorted(h.enums)
    classes = _binding_enums()
    missing = sorted(set(h.enums) - set(classes))
    assert not missing, "enums of include/xsched.h without a class in xsched.py: %s" % missing
    unknown = sorted(set(classes) - set(h.enums))
    assert not unknown, "enum classes of xsched.py naming no header enum: %s" % unknown
    for cname, cls in sorted(classes.items()):
        values = h.enums[cname]
        prefix = _prefix(list(values))
        by_key = {n[len(prefix):].lower(): (n, v) for n, v in values.items()}
        seen = set()
        for key, member in cls.__members__.items():
            if member.name != key:  # an alias (Policy.HPF): any value of the enum
                assert int(member) in values.values(), "%s.%s = %d is no %s value" % (
                    cls.__name__, key, int(member), cname)
                continue
            k = key.replace("_", "").lower()
            assert k in by_key, "%s.%s: the header has no %s%s" % (cls.__name__, key, prefix,
                                                                  key)
            n, v = by_key[k]
            assert int(member) == v, "%s.%s = %d, header %s = %d" % (cls.__name__, key,
                                                                     int(member), n, v)
            seen.add(n)
        left = sorted(n for n in values if n not in seen and not n.endswith(("Max", "MaskAll")))
        assert not left, "%s lacks %s of the header's %s" % (cls.__name__, left, cname)


def test_result_names():
    h = Header()
    for n, v in h.enums["XResult"].items():
        name = xsched._C_NAMES.get(xsched.Result(v))
        assert name == n, "Result %d is %s in the header, %s in the binding" % (v, n, name)
        assert xsched.result_name(v) == n, "XResultName(%d) is %s, not %s" % (
            v, xsched.result_name(v), n)
        if v:
            assert xsched.error_for(v).name == n
    # A value no XResult has: its number, in the name and in the exception.
    assert xsched.has_function("XResultName")
    assert xsched._XResultName(12345) == b"XResult(unknown)"
    assert xsched.result_name(12345) == "XResult(12345)"
    e = xsched.error_for(12345, "XQueueWait")
    assert type(e) is xsched.XSchedError and str(e) == "XQueueWait: XResult(12345)", str(e)


def test_constants():
    h = Header()
    version = "%d.%d.%d" % tuple(h.defines.pop("XSCHED_VERSION_" + p)
                                 for p in ("MAJOR", "MINOR", "PATCH"))
    assert xsched.__version__ == version, "xsched.py is %s, the header %s" % (
        xsched.__version__, version)
    assert "PRIORITY_MAX" in h.defines, sorted(h.defines)
    for name, value in sorted(h.defines.items()):
        py = name[len("XSCHED_"):] if name.startswith("XSCHED_") else name
        assert hasattr(xsched, py), "%s of the header is not xsched.%s" % (name, py)
        assert getattr(xsched, py) == value, "xsched.%s = %r, header %s = %d" % (
            py, getattr(xsched, py), name, value)


def test_structs():
    h = Header()
    for name, fields in sorted(h.structs.items()):
        cls = getattr(xsched, name, None)
        assert cls is not None and issubclass(cls, ctypes.Structure), \
            "struct %s of the header is not xsched.%s" % (name, name)
        got = [f[0] for f in cls._fields_]
        assert got == [f[0] for f in fields], "%s fields: header %s, binding %s" % (
            name, [f[0] for f in fields], got)
        for (fname, ctype), (_, t) in zip(fields, cls._fields_):
            _same(h, h.base(ctype), t, "%s.%s" % (name, fname))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import _runner
    sys.exit(_runner.run(globals(), "xsched.py against include/xsched.h"))
