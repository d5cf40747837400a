"""README.md's Python quick start runs as written.

The fenced ``python`` blocks that follow a ``<!-- tests/python/test_readme.py runs ...``
comment are taken from the README and run, each as its own program, from the repository
root with the environment the README's ``export`` line gives (the library is the one of
the build under test: XSCHED_LIBRARY from the environment, else the README's path). The
first (host backend) always runs; the next ones (GPU) run where PyTorch sees a GPU and
are otherwise only compiled. Run alone (``python3 tests/python/test_readme.py``) or with
pytest.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
README = os.path.join(ROOT, "README.md")
MARK = "<!-- tests/python/test_readme.py runs"


def _readme():
    with open(README) as f:
        return f.read()


def _snippets():
    """The marked python blocks, in order."""
    text = _readme()
    blocks = []
    for m in re.finditer(re.escape(MARK) + r".*?-->\s*\n```python\n(.*?)\n```", text, re.S):
        blocks.append(m.group(1) + "\n")
    return blocks


def _environment():
    """The variables of the README's `export XSCHED_LIBRARY=... PYTHONPATH=...` line,
    with $PWD as the repository root."""
    m = re.search(r"^\s*export (XSCHED_LIBRARY=.*)$", _readme(), re.M)
    assert m, "README.md has no `export XSCHED_LIBRARY=...` line for the quick start"
    env = dict(os.environ)
    given = {}
    for item in m.group(1).split():
        name, _, value = item.partition("=")
        given[name] = value.replace("$PWD", ROOT)
    assert set(given) == {"XSCHED_LIBRARY", "PYTHONPATH"}, given
    env["PYTHONPATH"] = given["PYTHONPATH"]
    env.setdefault("XSCHED_LIBRARY", given["XSCHED_LIBRARY"])
    return env


def _run(code, name):
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_environment(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=240)
    print(p.stdout, end="")
    assert p.returncode == 0, "%s exited with %d:\n%s" % (name, p.returncode, p.stdout)
    return p.stdout


def _gpu():
    """None when PyTorch sees a GPU, else why the GPU snippets are not run."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no GPU visible to PyTorch"
    return None


def test_snippets_found():
    blocks = _snippets()
    assert len(blocks) >= 2, "expected the host and the GPU quick start, found %d" % len(blocks)
    for i, code in enumerate(blocks):
        compile(code, "README.md python block %d" % (i + 1), "exec")


def test_host_snippet():
    out = _run(_snippets()[0], "the host quick start")
    assert out.strip(), "the host quick start printed nothing"


def test_gpu_snippets():
    why = _gpu()
    if why:
        print("GPU quick start compiled, not run: %s" % why)
        return
    for i, code in enumerate(_snippets()[1:]):
        _run(code, "GPU quick start %d" % (i + 1))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import _runner
    sys.exit(_runner.run(globals(), "README.md quick start"))
