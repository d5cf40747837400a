#!/usr/bin/env python3
"""LLM token serving beside training and batch inference on one GPU, in one process: what
each way of sharing the GPU does to the time to first token and the time per output token,
and how much work it leaves the best-effort lanes (issue 36).

High priority: LLM token serving. A decoder-only transformer written in torch.nn, fp16,
random weights (by default 18 layers, d_model 2048, 16 heads, MLP 4x with GELU, vocabulary
32000, learned positions, RMSNorm, untied output head: 1.04 B parameters), with a KV cache
preallocated for prompt + decode steps. Requests arrive at random (Poisson, --rate,
default 8/s; the arrival times are drawn from --seed, so every mode sees the same ones)
and wait in order for one serving thread, which runs each: batch --batch (4) prompts of
--prompt-len (128) tokens copied from the host, an eager prefill, a host read of the first
tokens, then --decode-steps (48) decode steps, each ONE replay of a CUDA graph (captured
once per mode on the serving stream, with static token, position and cache tensors)
followed by a host read of the batch's next tokens (`.cpu()`: a synchronization, as a
server does before it streams a token out).

Low priority, each lane on its own thread and stream, back to back (at most two
iterations queued, retired by blocking events):
  ViT     torchvision vit_b_16(weights=None) training, batch 32, 224x224 random images,
          cross-entropy, AdamW, bf16 autocast (bf16 needs no loss scaler, so no host
          synchronization per step); steps/s
  ResNet  torchvision resnet50(weights=None).eval() inference, batch 128, 224x224, fp32
          (cuDNN's default TF32), torch.inference_mode; forward passes/s

Modes (--modes, comma-separated; default all = alone, native, prio, xsched, then
xsched-obj-X for each X of --objectives, then corun-US for each US of --corun). Each runs
for --warmup s (after each thread's own warm-up iterations), then --duration s measured:
  alone          four runs: the LLM alone, then each low lane alone (the references of
                 the "x alone" and "kept" figures), then the two lanes together without
                 the LLM (what they keep of each alone when they share the GPU: the most
                 they can keep beside it); no library
  native         the three together on default-priority streams, no library
  prio           the LLM's stream created with the greatest priority PyTorch gives
                 (torch.cuda.Stream(priority=greatest of Stream.priority_range()): PyTorch
                 pools at most 4 levels, 0 to -3, the device may have more) before its
                 graph is captured, the lows' at the least (0); no library
  xsched         the library's defaults: each stream wrapped in an XQueue at its highest
                 level, the LLM at priority 2, each request served inside one whole scope
                 (`with xq.running(per_operator=False)`, the form doc/python.md gives the
                 top-priority model), the lows at priority 1 in module scopes
                 (`xq.running(per_module=model)` around each step); the LLM stream made at
                 the greatest priority by the application before capture, as in prio
  xsched-obj-X   xsched with a latency objective X on the LLM's XQueue (objective=X)
  corun-US       xsched with a fixed co-run budget: xsched.set_corun_budget(US)
Between modes every thread has stopped, the device is synchronized, the XQueues are closed
and xsched.shutdown() resets the library (the co-run budget included). Models are built
once; the module scopes' hooks stay on the low models afterwards (a Python call per leaf
module that returns at once outside a scope), so the baselines run first by default.

Output: a header, then one row per mode (alone: one per run) on stdout as each ends:
  reqs/bklg      requests that arrived in the measured window and were served / those
                 that arrived in it but were not started by its end (the backlog)
  TTFT p50, p99  time to first token: arrival to the host read of the prefill's tokens
                 (queueing included), ms, and (x) over alone's
  TPOT p50       time per output token: per request, the mean time between two token reads
                 over its decode steps; the median over requests, ms (x alone)
  TPOT p99       the 99th percentile over every decode step of every request (x alone)
  ViT, ResNet    steps or forward passes per second, (kept) over the lane alone
  CPU            cores busy: the process's CPU time over wall time in the window (waiting
                 threads may spin: torch's `.cpu()` synchronizes as CUDA's default
                 schedule says)
  LLM xq         library modes: the LLM XQueue's measured slowdown (XQueueStats) at the
                 end, and its device's co-run budget sampled every 0.1 s (median
                 [min-max], us; "unl" = not limited)
The JSON row of each mode also says where the decode steps' host time went (step_parts:
entering the unit, launching the step, reading its tokens, leaving the unit, in ms, over
every step and over those above twice the median): a slow "read" waited for the GPU (or for
the interpreter's lock after it), a slow "enter" or "exit" for the library.
Percentiles are nearest-rank. Targets of issue 36 follow as MET/MISSED lines where their
modes ran (GPU only). Progress goes to stderr. --jsonl PATH writes a "run" line, one "mode"
line per row (every figure, the stream priorities before and after wrapping, every
XQueue's stats) and one "target" line per target. Figures belong in doc/RESULTS.md, with
the device, the date and the command line.

Run time on an NVIDIA H100 (estimated: 10 runs of about 3 s set-up + 3 s warm-up + 20 s,
plus the start-up): about 5 minutes for the default set; --quick (8 s measured, 2 s
warm-up) about 2.5 minutes. To cut it: --duration S, --modes (e.g. alone,prio,xsched,xsched-obj-1.5)
and --objectives. Each --corun value adds one mode.

--processes 2: the LLM in this process and the low lanes in a second one, which the
benchmark starts (this program again, --lows-child); priorities then cross processes
through the board (doc/architecture.md, "Several processes on one GPU: the board"; on the
CPU both processes get XSCHED_BOARD = a temporary directory, on a GPU the device's board
in /dev/shm). Its modes, after alone: native-2p and prio-2p (no library, two processes),
xsched (the library, one process: today's figure for the same load) and xsched-2p (the
library, two processes); any mode above may be named with -2p. Target: xsched-2p's TPOT
p99 within 1.2x alone, with the lows keeping at least 0.90 of what xsched keeps.

--smoke runs everything on the CPU with tiny shapes (2 layers, d_model 64, batch 2, 4
decode steps, 20 req/s, 1 s per mode, the decode step run eagerly instead of as a graph;
tiny stand-ins for ViT and ResNet; the library's XQueues on host queues, hardware
priorities absent so prio is native there; objectives 1.5 and co-run 500 us unless
given): it checks the program, not the GPU; its figures mean nothing. It is the `meson
benchmark` (python-llm-serve) that CI runs.

  XSCHED_LIBRARY=build/libxsched.so PYTHONPATH=bindings/python \\
      python3 benchmarks/python/llm_serve.py --jsonl llm_serve.jsonl

Needs PyTorch (2.0+ on a GPU: scaled_dot_product_attention) and torchvision; random
weights, nothing downloaded. Exit status 0: every mode ran; 1: a mode failed (its row says
why); 77: no PyTorch.
"""
import argparse
import contextlib
import datetime
import gc
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bindings", "python"))
# A lazily loaded kernel's first launch waits for every stream, also one stopped at a
# suspended XQueue's gate: load every kernel when CUDA starts (doc/python.md).
os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

try:
    import torch
except ImportError:
    print("skipped: PyTorch cannot be imported by %s" % sys.executable)
    sys.exit(77)
nn = torch.nn
F = torch.nn.functional

try:
    import xsched
    XSCHED_ERROR = None
except ImportError as e:  # LibraryNotFoundError: the library modes report it
    xsched = None
    XSCHED_ERROR = "%s: %s" % (type(e).__name__, e)

HIGH_PRIORITY = 2  # the LLM's XQueue (HPF: higher runs first)
LOW_PRIORITY = 1   # both low lanes' XQueues: one priority, so they share
UNLIMITED = 2 ** 64 - 1  # XQueueStats.corun_budget_ns: not limited

FULL = dict(load=0.6, decode_steps=48, prompt_len=128, batch=4, layers=18, d_model=2048,
            heads=16, vocab=32000, vit_batch=32, resnet_batch=128, image=224,
            duration=20.0, warmup=3.0, objectives="1.5,2.0,3.0", corun="")
QUICK = dict(FULL, duration=8.0, warmup=2.0)
SMOKE = dict(load=0.6, decode_steps=4, prompt_len=16, batch=2, layers=2, d_model=64,
             heads=4, vocab=256, vit_batch=4, resnet_batch=8, image=32, duration=1.0,
             warmup=0.3, objectives="1.5", corun="500")
# --size: the LLM's shape (the second size is the ~3 B decoder of issue 42's second row).
SIZES = {"1b": dict(layers=18, d_model=2048, heads=16, batch=4, prompt_len=128,
                    decode_steps=48),
         "3b": dict(layers=26, d_model=3072, heads=24, batch=16, prompt_len=256,
                    decode_steps=64)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Defaults are the full run's; --quick and --smoke "
                                       "change those not given (see the module docstring).")
    p.add_argument("--quick", action="store_true", help="8 s measured and 2 s warm-up a mode")
    p.add_argument("--smoke", action="store_true",
                   help="CPU only, tiny shapes, host queues: checks the program (CI)")
    p.add_argument("--modes", default="all",
                   help="comma-separated: all, alone, native, prio, xsched, xsched-obj "
                        "(every --objectives value), xsched-obj-X, corun (every --corun "
                        "value), corun-US (default all)")
    p.add_argument("--objectives", help="latency objectives of the xsched-obj modes "
                                        "(default 1.2,1.5,2.0,3.0)")
    p.add_argument("--corun", help="co-run budgets (us) of the corun modes (default none)")
    p.add_argument("--load", type=float,
                   help="the LLM's load: requests per second as a fraction of what it "
                        "serves alone back to back, measured first (default 0.6)")
    p.add_argument("--rate", type=float,
                   help="LLM requests per second, Poisson (instead of --load)")
    p.add_argument("--rate-step", metavar="T:LOAD",
                   help="at T s into each measured window the load becomes LOAD (a step, "
                        "to see how soon the objective's controller settles)")
    p.add_argument("--size", choices=sorted(SIZES), default="1b",
                   help="the LLM's shape: 1b (18 layers, d 2048, batch 4, prompt 128, 48 "
                        "steps) or 3b (26 layers, d 3072, batch 16, prompt 256, 64 steps); "
                        "explicit shape options override it")
    p.add_argument("--eager", action="store_true",
                   help="decode steps run eagerly (a few hundred kernels launched from "
                        "Python per step) instead of as CUDA graph replays")
    p.add_argument("--decode-steps", type=int, help="decode steps per request (default 48)")
    p.add_argument("--prompt-len", type=int, help="prompt tokens per sequence (default 128)")
    p.add_argument("--batch", type=int, help="sequences per LLM request (default 4)")
    p.add_argument("--layers", type=int, help="decoder layers (default 18: 1.04 B parameters)")
    p.add_argument("--d-model", type=int, help="model width (default 2048)")
    p.add_argument("--heads", type=int, help="attention heads (default 16)")
    p.add_argument("--vocab", type=int, help="vocabulary (default 32000)")
    p.add_argument("--vit-batch", type=int, help="ViT training batch (default 32)")
    p.add_argument("--resnet-batch", type=int, help="ResNet inference batch (default 128)")
    p.add_argument("--duration", type=float, help="seconds measured per mode (default 20)")
    p.add_argument("--warmup", type=float, help="seconds before measuring (default 3)")
    p.add_argument("--low-commands", choices=("module", "op"), default="module",
                   help="library modes: what a low lane's command is: a leaf module "
                        "(running(per_module=net), the default) or an operator "
                        "(running(), per_operator: shorter commands, a Python hook each)")
    p.add_argument("--low-threshold", type=int, default=0,
                   help="library modes: the low XQueues' window (0: the library's default)")
    p.add_argument("--switch-interval", type=float, default=0.001,
                   help="sys.setswitchinterval (s), the same in every mode (default 0.001)")
    p.add_argument("--jsonl", metavar="PATH", help="also write every row as a JSON line")
    p.add_argument("--trace", metavar="DIR",
                   help="record the library's timeline trace (doc/architecture.md) for the "
                        "first --trace-seconds of each library mode's measured window, into "
                        "DIR/MODE.json (benchmarks/python/trace_slices.py reads it; the "
                        "trace perturbs the mode's first seconds and its cpu_cores)")
    p.add_argument("--trace-seconds", type=float, default=2.0, metavar="S",
                   help="how long --trace records in each mode (default 2)")
    p.add_argument("--seed", type=int, default=1, help="arrival times and prompts (default 1)")
    p.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    p.add_argument("--processes", type=int, default=1, choices=(1, 2),
                   help="2: the low lanes in a second process (modes *-2p; see above)")
    p.add_argument("--lows-child", metavar="MODE", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    base = dict(SMOKE if a.smoke else QUICK if a.quick else FULL)
    if not a.smoke:
        base.update(SIZES[a.size])
    for k, v in base.items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    a.step_at = a.step_load = None
    if a.rate_step:
        try:
            t, x = a.rate_step.split(":")
            a.step_at, a.step_load = float(t), float(x)
        except ValueError:
            p.error("--rate-step wants T:LOAD, e.g. 10:0.9")
        if a.rate is not None:
            p.error("--rate-step scales --load: give --load, not --rate")
    a.image = base["image"]
    try:
        a.objectives = [float(x) for x in a.objectives.split(",") if x.strip()]
        a.corun = [int(x) for x in a.corun.split(",") if x.strip()]
    except ValueError as e:
        p.error("--objectives/--corun: %s" % e)
    if any(x < 1.0 for x in a.objectives):
        p.error("--objectives: each at least 1.0")
    if a.d_model % a.heads:
        p.error("--heads must divide --d-model")
    for k in ("load", "duration", "decode_steps", "prompt_len", "batch", "layers"):
        if getattr(a, k) <= 0:
            p.error("--%s must be positive" % k.replace("_", "-"))
    if a.rate is not None and a.rate <= 0:
        p.error("--rate must be positive")
    try:
        a.modes = expand_modes(a.modes, a.objectives, a.corun, a.processes)
    except ValueError as e:
        p.error(str(e))
    return a


def expand_modes(spec, objectives, coruns, processes=1):
    out = []
    for m in (s.strip() for s in spec.split(",")):
        if not m:
            continue
        if m == "all" and processes == 2:
            names = ["alone", "native-2p", "prio-2p", "xsched", "xsched-2p"]
        elif m == "all":
            names = ["alone", "native", "prio", "xsched"]
            names += ["xsched-obj-%g" % x for x in objectives]
            names += ["corun-%d" % us for us in coruns]
        elif m == "xsched-obj":
            names = ["xsched-obj-%g" % x for x in objectives]
        elif m == "corun":
            names = ["corun-%d" % us for us in coruns]
        else:
            names = [m]
        for n in names:
            mode_spec(n)  # raises ValueError for an unknown one
            if n not in out:
                out.append(n)
    if "alone" in out:  # the references first
        out.remove("alone")
        out.insert(0, "alone")
    return out


def step_parts(parts):
    """Where a decode step's host time goes (ms, means): entering its unit (XQueueBeginUnit),
    launching the step, reading its tokens (waiting for the GPU), leaving the unit
    (XQueueEndUnit); over every step and over the slow ones (more than twice the median
    step)."""
    if not parts:
        return None
    total = [(x[4] - x[0]) * 1e3 for x in parts]
    med = statistics.median(total)

    def mean(rows):
        if not rows:
            return None
        return {k: round(statistics.fmean((x[i + 1] - x[i]) * 1e3 for x in rows), 3)
                for i, k in enumerate(("enter", "launch", "read", "exit"))}
    slow = [x for x, t in zip(parts, total) if t > 2 * med]
    return {"steps": len(parts), "median_ms": round(med, 3), "all": mean(parts),
            "slow_n": len(slow), "slow": mean(slow)}


def mode_spec(name):
    """What mode @name does: library, high-priority LLM stream made by the application,
    objective, co-run us, where the LLM's graph gets its priority (capture: "app" = the
    stream was made at the greatest priority; "lib" = a default stream, the XQueue made
    first and the graph captured with XQueue.capture(); "after" = a default stream, the
    XQueue made after capture), and the low lanes in a second process (procs)."""
    if name.endswith("-2p") and name != "alone-2p":
        return dict(mode_spec(name[:-3]), procs=True)
    return dict(_mode_spec(name), procs=False)


def _mode_spec(name):
    spec = dict(library=False, prio=False, objective=None, corun=None, capture="app")
    if name in ("alone", "native"):
        return spec
    if name == "prio":
        return dict(spec, prio=True)
    if name == "xsched":
        return dict(spec, library=True, prio=True)
    try:
        if name.startswith("xsched-obj-"):
            x = float(name[len("xsched-obj-"):])
            if x >= 1.0:
                return dict(spec, library=True, prio=True, objective=x)
        elif name.startswith("corun-"):
            us, _, cap = name[len("corun-"):].partition("-")
            if int(us) >= 0 and cap in ("", "lib", "after"):
                return dict(spec, library=True, prio=not cap, corun=int(us),
                            capture=cap or "app")
    except ValueError:
        pass
    raise ValueError("unknown mode %r (alone, native, prio, xsched, xsched-obj-X with X >= "
                     "1, corun-US, corun-US-lib, corun-US-after, each but alone also "
                     "with -2p)" % name)


def pct(xs, q):
    """Nearest-rank percentile, or None for no samples."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[max(0, math.ceil(q / 100.0 * len(xs)) - 1)]


def progress(msg):
    print("[llm_serve] %s" % msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------
# The LLM
# ----------------------------------------------------------------------------------------

def attention(q, k, v, mask=None, causal=False):
    """Scaled dot-product attention over [B, heads, T, head_dim] tensors; a bool @mask
    says which keys take part. PyTorch 1.x (the CPU smoke run on Debian) lacks the fused
    call: the same in plain operators there."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        n = q.size(-2)
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return s.softmax(-1) @ v


class RMSNorm(nn.Module):
    def __init__(self, d, **kw):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d, **kw))
        self.eps = 1e-5

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x32.to(x.dtype) * self.weight


class Block(nn.Module):
    """Pre-norm decoder layer with its own slice of the KV cache."""

    def __init__(self, cfg, max_len, kw):
        super().__init__()
        d = cfg.d_model
        self.h, self.hd = cfg.heads, d // cfg.heads
        self.norm1 = RMSNorm(d, **kw)
        self.qkv = nn.Linear(d, 3 * d, bias=False, **kw)
        self.out = nn.Linear(d, d, bias=False, **kw)
        self.norm2 = RMSNorm(d, **kw)
        self.up = nn.Linear(d, 4 * d, bias=False, **kw)
        self.down = nn.Linear(4 * d, d, bias=False, **kw)
        shape = (cfg.batch, self.h, max_len, self.hd)
        self.register_buffer("k_cache", torch.zeros(shape, **kw), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, **kw), persistent=False)

    def _qkv(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        return qkv[0], qkv[1], qkv[2]  # each [B, heads, T, head_dim]

    def _rest(self, x, att):
        b, h, t, hd = att.shape
        x = x + self.out(att.transpose(1, 2).reshape(b, t, h * hd))
        return x + self.down(F.gelu(self.up(self.norm2(x)), approximate="tanh"))

    def prefill(self, x):
        q, k, v = self._qkv(x)
        t = x.size(1)
        self.k_cache[:, :, :t].copy_(k)
        self.v_cache[:, :, :t].copy_(v)
        return self._rest(x, attention(q, k, v, causal=True))

    def decode(self, x, pos, mask):
        q, k, v = self._qkv(x)
        self.k_cache.index_copy_(2, pos, k)  # position read on the device: graph-safe
        self.v_cache.index_copy_(2, pos, v)
        return self._rest(x, attention(q, self.k_cache, self.v_cache, mask=mask))


class Decoder(nn.Module):
    def __init__(self, cfg, device, dtype):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.max_len = cfg.prompt_len + cfg.decode_steps
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model, **kw)
        self.posemb = nn.Embedding(self.max_len, cfg.d_model, **kw)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.posemb.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(cfg, self.max_len, kw) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.d_model, **kw)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False, **kw)
        self.register_buffer("positions", torch.arange(self.max_len, device=device),
                             persistent=False)
        self.requires_grad_(False)

    def prefill(self, tokens):
        """[B, T] prompt tokens -> [B] first generated tokens; fills cache rows 0..T-1."""
        x = self.tok(tokens) + self.posemb(self.positions[:tokens.size(1)])
        for b in self.blocks:
            x = b.prefill(x)
        return self.head(self.norm(x[:, -1])).argmax(-1)

    def decode(self, tokens, pos):
        """[B, 1] tokens at position @pos (a [1] tensor) -> [B, 1] next tokens."""
        mask = (self.positions <= pos).view(1, 1, 1, -1)  # keys 0..pos take part
        x = self.tok(tokens) + self.posemb(pos)
        for b in self.blocks:
            x = b.decode(x, pos, mask)
        return self.head(self.norm(x)).argmax(-1)


class Server:
    """One mode's serving state: static decode tensors, the decode step's CUDA graph
    (captured on @stream), prompts on the host."""

    def __init__(self, model, cfg, device, stream, seed, xq=None):
        self.model, self.device, self.stream = model, device, stream
        self.xq = xq  # capture through XQueue.capture() (the library's priority)
        self.prompt_len, self.steps = cfg.prompt_len, cfg.decode_steps
        # Per decode step, host times: before its unit, in it, after the launch, after the
        # read, after the unit's end (step_parts).
        self.parts = []
        b = cfg.batch
        self.tokens = torch.zeros(b, 1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.next = torch.zeros(b, 1, dtype=torch.long, device=device)
        g = torch.Generator().manual_seed(seed)
        self.prompts = [torch.randint(0, cfg.vocab, (b, cfg.prompt_len), generator=g)
                        for _ in range(8)]
        self.graph = None
        if stream is not None and not cfg.eager:
            self._capture()

    def _step_eager(self):
        nxt = self.model.decode(self.tokens, self.pos)
        self.next.copy_(nxt)
        self.tokens.copy_(nxt)
        self.pos.add_(1)

    def _capture(self):
        # Captured on the serving stream as this mode made it. prio and the library modes
        # create that stream at the greatest priority before this, in the application:
        # measured with 0.5.3 (issue 36), the priority the library sets on an existing
        # stream (cuStreamSetAttribute, when its XQueue is at the top) did not reach this
        # model's work (graph replays, eager prefill, or both), while a stream created at
        # that priority did.
        s = self.stream
        s.wait_stream(torch.cuda.current_stream())
        with torch.no_grad():
            with torch.cuda.stream(s):
                self.pos.fill_(self.prompt_len)
                for _ in range(3):  # warm-up (cuBLAS workspaces, kernels) before capture
                    self._step_eager()
            s.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            if self.xq is not None:  # at the priority the library set on the stream
                ctx = self.xq.capture(self.graph, capture_error_mode="thread_local")
            else:
                ctx = torch.cuda.graph(self.graph, stream=s, capture_error_mode="thread_local")
            with ctx:
                self._step_eager()
        torch.cuda.synchronize()

    def request(self, i, unit=None):
        """Serve request @i on the current stream (no_grad on): returns the host time of
        the first tokens' read and those of each decode step's read. @unit: a context
        manager factory around each decode step (XQueue.unit: one unit of the objective)."""
        prompt = self.prompts[i % len(self.prompts)].to(self.device)
        first = self.model.prefill(prompt)
        first.cpu()
        t_first = time.perf_counter()
        self.tokens.copy_(first.view(-1, 1))
        self.pos.fill_(self.prompt_len)
        reads = []
        for _ in range(self.steps):
            # One unit per token as the host sees it: the step and the read of its tokens
            # (what a time-per-token objective is stated on; the read waits for the GPU and
            # then for the interpreter's lock, which other Python threads may hold).
            t0 = time.perf_counter()
            cm = unit() if unit is not None else contextlib.nullcontext()
            with cm:
                t1 = time.perf_counter()
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self._step_eager()
                t2 = time.perf_counter()
                self.next.cpu()  # the host needs the tokens: a synchronization per token
                t3 = time.perf_counter()
            reads.append(time.perf_counter())
            self.parts.append((t0, t1, t2, t3, reads[-1]))
        return t_first, reads

    def close(self):
        self.graph = None


# ----------------------------------------------------------------------------------------
# The low lanes
# ----------------------------------------------------------------------------------------

class TinyViT(nn.Module):
    """Smoke stand-in for ViT-B/16 without torchvision: patches, one encoder layer."""

    def __init__(self, classes=10, d=32):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 16, stride=16)
        self.enc = nn.TransformerEncoderLayer(d, 2, 2 * d, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.enc(t).mean(1))


def tiny_cnn(classes=10):
    """Smoke stand-in for ResNet-50 without torchvision."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(32, classes))


def low_models(smoke):
    """(ViT, ResNet, description): torchvision's, tiny torchvision ones or stand-ins."""
    try:
        import torchvision
    except ImportError:
        if not smoke:
            raise SystemExit("llm_serve.py needs torchvision for its low lanes")
        return TinyViT(), tiny_cnn(), "tiny stand-ins (no torchvision)"
    tm = torchvision.models
    if smoke:
        vit = tm.VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2,
                                   hidden_dim=32, mlp_dim=64, num_classes=10)
        res = tm.resnet.ResNet(tm.resnet.BasicBlock, [1, 1, 1, 1], num_classes=10)
        return vit, res, "tiny torchvision ViT and ResNet"
    return (tm.vit_b_16(weights=None), tm.resnet50(weights=None),
            "torchvision vit_b_16 and resnet50, random weights")


class Lane:
    """A low lane: its model, its step, its stream, XQueue and completions."""

    def __init__(self, name, unit, net):
        self.name, self.unit, self.net = name, unit, net
        self.stream = None
        self.xq = None
        self.done = []  # host times of retired iterations

    def step(self):
        raise NotImplementedError


class VitTraining(Lane):
    def __init__(self, net, batch, image, device):
        super().__init__("vit", "steps/s", net.to(device).train())
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-4)
        self.x = torch.randn(batch, 3, image, image, device=device)
        self.y = torch.randint(0, 10, (batch,), device=device)
        self.amp = device.type == "cuda"

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        amp = torch.autocast("cuda", dtype=torch.bfloat16) if self.amp \
            else contextlib.nullcontext()
        with amp:
            loss = F.cross_entropy(self.net(self.x), self.y)
        loss.backward()
        self.opt.step()


class ResNetInference(Lane):
    def __init__(self, net, batch, image, device):
        super().__init__("resnet", "fwd/s", net.to(device).eval())
        self.x = torch.randn(batch, 3, image, image, device=device)

    def step(self):
        with torch.inference_mode():  # thread-local: entered on the lane's thread
            self.net(self.x)


# ----------------------------------------------------------------------------------------
# One run: a mode, or one of alone's four
# ----------------------------------------------------------------------------------------

class RunFailed(Exception):
    """A run that failed: a one-line summary, and the tracebacks behind it."""

    def __init__(self, summary, detail=""):
        super().__init__(summary)
        self.detail = detail


class Run:
    """The threads of one run and their measurements. @lanes: the low lanes taking part;
    @with_llm: whether the LLM serves."""

    def __init__(self, bench, name, spec, with_llm, lanes):
        self.b, self.name, self.spec = bench, name, spec
        self.with_llm, self.lanes = with_llm, lanes
        self.stop = threading.Event()
        self.go = threading.Event()
        n = len(lanes) + (1 if with_llm else 0)
        self.ready = threading.Barrier(n + 1)
        self.errors = []
        self.served = []  # (arrival, start, first read, [token reads])
        self.parts = []  # the server's step_parts times
        self.xq_llm = None
        self.hwqs = []  # host queues to close after their XQueues (smoke)
        self.samples = []  # (corun_budget_ns, slowdown_permille) of the LLM XQueue
        self.priorities = {}
        self.arrivals = []
        self.t_measure = self.t_end = 0.0
        self.child = None  # the lows' process (-2p modes)
        self.board_dir = None

    # -- threads -----------------------------------------------------------------------
    def _guard(self, what, fn):
        try:
            fn()
        except BaseException as e:  # noqa: B902 - reported with the mode's row
            self.errors.append("%s thread: %s: %s\n%s" % (
                what, type(e).__name__, e, traceback.format_exc()))
            self.stop.set()
            self.ready.abort()

    def _wait_go(self):
        try:
            self.ready.wait(timeout=900)
        except threading.BrokenBarrierError:
            return False
        self.go.wait()
        return not self.stop.is_set()

    def _llm_context(self):
        if self.xq_llm is not None:
            # The top-priority model's documented form: the request is one whole scope.
            return self.xq_llm.running(per_operator=False)
        return self.b.on(self.b.s_llm)

    def _lane_context(self, lane):
        if lane.xq is not None:
            if self.b.args.low_commands == "op":
                return lane.xq.running()  # a command per operator
            return lane.xq.running(per_module=lane.net)  # a boundary per leaf module
        return self.b.on(lane.stream)

    def llm_thread(self):
        srv = self.server
        with torch.no_grad():
            with self.b.on(self.b.s_llm):  # warm-up: one request, no library
                srv.request(0)
            self.b.stream_sync(self.b.s_llm)
            if not self._wait_go():
                return
            for i, a in enumerate(self.arrivals):
                now = time.perf_counter()
                if now >= self.t_end or self.stop.is_set():
                    break
                if a > now:
                    time.sleep(a - now)
                t_start = time.perf_counter()
                unit = self.xq_llm.unit if self.xq_llm is not None else None
                with self._llm_context():
                    t_first, reads = srv.request(i + 1, unit)
                self.served.append((a, t_start, t_first, reads))

    def lane_thread(self, lane):
        with self.b.on(lane.stream):  # warm-up: two iterations, no library
            lane.step()
            lane.step()
        self.b.stream_sync(lane.stream)
        if not self._wait_go():
            return
        prev = None
        while not self.stop.is_set():
            with self._lane_context(lane):
                lane.step()
            ev = self.b.mark(lane.stream)
            if ev is None:  # CPU: the iteration is complete
                lane.done.append(time.perf_counter())
                continue
            if prev is not None:  # keep at most two iterations queued
                prev.synchronize()
                lane.done.append(time.perf_counter())
            prev = ev
        if prev is not None:
            prev.synchronize()
            lane.done.append(time.perf_counter())

    # -- the library -------------------------------------------------------------------
    def _xqueue(self, stream, **kw):
        if stream is None:  # CPU: a host queue stands in for the stream
            hwq = xsched.HostQueue()
            self.hwqs.append(hwq)
            return xsched.XQueue(hwq, level="max", **kw)
        return xsched.XQueue(stream, level="max", **kw)

    def _make_xqueues(self):
        if xsched is None:
            raise RuntimeError("libxsched not loaded: " + XSCHED_ERROR)
        if self.spec["corun"] is not None:
            xsched.set_corun_budget(self.spec["corun"])
        if self.with_llm and self.xq_llm is None:
            self.xq_llm = self._xqueue(self.b.s_llm, priority=HIGH_PRIORITY,
                                       objective=self.spec["objective"])
        thr = self.b.args.low_threshold or None
        for lane in self.lanes:
            lane.xq = self._xqueue(lane.stream, priority=LOW_PRIORITY, threshold=thr)

    def _teardown_xqueues(self):
        stats = {}
        xqs = [("llm", self.xq_llm)] + [(lane.name, lane.xq) for lane in self.lanes]
        for name, xq in xqs:
            if xq is not None:
                stats[name] = xq.stats().as_dict()
        for name, xq in xqs:
            if xq is not None:
                xq.close()  # drains: every submitted command runs
        self.xq_llm = None
        for lane in self.lanes:
            lane.xq = None
        for hwq in self.hwqs:
            hwq.close()
        self.hwqs = []
        xsched.shutdown()  # forgets the co-run budget and the scheduler's choices
        return stats

    def _read_priorities(self, when):
        b = self.b
        if not b.cuda:
            return
        pr = {"llm": b.s_llm.priority} if self.with_llm else {}
        for lane in self.lanes:
            pr[lane.name] = lane.stream.priority
        self.priorities[when] = pr

    # -- the run -----------------------------------------------------------------------
    def execute(self):
        b, a = self.b, self.b.args
        t_begin = time.perf_counter()
        b.make_streams(self.spec["prio"], self.lanes)
        if self.with_llm and self.spec["capture"] == "lib" and b.cuda:
            # The XQueue first: its graph is captured at the priority the library sets.
            self.xq_llm = self._xqueue(b.s_llm, priority=HIGH_PRIORITY,
                                       objective=self.spec["objective"])
        self.server = Server(b.llm, a, b.device, b.s_llm, a.seed,
                             self.xq_llm) if self.with_llm else None
        self.parts = self.server.parts if self.server else []
        self._read_priorities("created")
        if self.spec["procs"]:
            self._start_child()
        threads = []
        if self.with_llm:
            threads.append(threading.Thread(target=self._guard, name="llm",
                                            args=("llm", self.llm_thread)))
        for lane in self.lanes:
            lane.done = []
            threads.append(threading.Thread(
                target=self._guard, name=lane.name,
                args=(lane.name, lambda lane=lane: self.lane_thread(lane))))
        for t in threads:
            t.start()
        stats = {}
        cpu = None
        try:
            self.ready.wait(timeout=900)  # every thread warmed up
            b.sync()
            if self.spec["library"]:
                self._make_xqueues()
            if self.child is not None:
                self._child_line("ready")  # its lanes warmed up, their XQueues made
            t0 = time.perf_counter()
            self.t_measure = t0 + a.warmup
            self.t_end = self.t_measure + a.duration
            self.arrivals = [t0 + x for x in b.schedule]
            progress("%s: measuring %g s after %g s of warm-up" % (
                self.name, a.duration, a.warmup))
            if self.child is not None:
                self.child.stdin.write("go %.9f %.9f\n" % (self.t_measure, self.t_end))
                self.child.stdin.flush()
            self.go.set()
            cpu = self._watch()
        except threading.BrokenBarrierError:
            self.stop.set()  # a thread failed in its warm-up: its error says why
        except BaseException as e:  # noqa: B902 - set-up failed: stop the threads
            self.errors.append("set-up: %s: %s\n%s" % (type(e).__name__, e,
                                                       traceback.format_exc()))
            self.stop.set()
        finally:
            self.go.set()
            alive = self._join(threads)
            if not alive:
                self._read_priorities("end")  # before the library restores them
                if self.xq_llm is not None or any(lane.xq for lane in self.lanes):
                    stats = self._teardown_xqueues()  # drains, whatever was suspended
                elif self.spec["library"] and xsched is not None:
                    xsched.shutdown()
                b.sync()
            if self.server is not None:
                self.server.close()
                self.server = None
            gc.collect()
            if b.cuda:
                torch.cuda.synchronize()
        child = self._end_child() if self.child is not None else None
        if self.errors:
            raise RunFailed("; ".join(e.splitlines()[0] for e in self.errors),
                            "\n".join(self.errors))
        if alive:
            raise RunFailed("threads still running after the run: %s (hung?); the library "
                            "was left as it was" % ", ".join(alive))
        row = self._results(cpu, stats)
        if child is not None:
            for lane in ("vit", "resnet"):
                row[lane] = child[lane]
            row.setdefault("xqueue_stats", {}).update(child["stats"])
            row["lows_cpu_cores"] = child["cpu_cores"]
        row["wall_s"] = round(time.perf_counter() - t_begin, 1)
        return row

    # -- the lows' process (-2p modes) ------------------------------------------------------
    def _start_child(self):
        """Start the second process, which runs the low lanes (--lows-child). On the CPU
        both processes share a board of host queues in a temporary directory."""
        env = os.environ.copy()
        if not self.b.cuda and self.spec["library"] and "XSCHED_BOARD" not in env:
            self.board_dir = tempfile.mkdtemp(prefix="llm-serve-board-")
            env["XSCHED_BOARD"] = os.environ["XSCHED_BOARD"] = self.board_dir
            if xsched is not None:
                xsched.shutdown()  # this process reads its settings again
        argv = [a for i, a in enumerate(sys.argv[1:])
                if a != "--jsonl" and (i == 0 or sys.argv[i] != "--jsonl")]
        self.child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)] + argv + ["--lows-child", self.name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def _child_line(self, want):
        """The child's next line, which must start with @want."""
        line = self.child.stdout.readline()
        if not line.startswith(want):
            raise RuntimeError("the lows' process said %r, not %r (its stderr says why)"
                               % (line.strip(), want))
        return line[len(want):].strip()

    def _end_child(self):
        """The child's figures (or None when it failed: an error of the run)."""
        try:
            out = json.loads(self._child_line("result"))
            self.child.wait(timeout=300)
            if out.get("errors"):
                self.errors.extend("lows' process: " + e for e in out["errors"])
            return out
        except Exception as e:  # noqa: B902 - reported with the mode's row
            self.errors.append("lows' process: %s: %s" % (type(e).__name__, e))
            self.child.kill()
            self.child.wait()
            return None
        finally:
            if self.board_dir is not None:
                del os.environ["XSCHED_BOARD"]
                if xsched is not None:
                    xsched.shutdown()
                import shutil
                shutil.rmtree(self.board_dir, ignore_errors=True)

    def execute_child(self):
        """In the lows' process: warm up, make the XQueues, say ready, run the window the
        parent gives, then print the figures as one JSON line."""
        b = self.b
        b.make_streams(self.spec["prio"], self.lanes)
        threads = [threading.Thread(target=self._guard, name=lane.name,
                                    args=(lane.name, lambda lane=lane: self.lane_thread(lane)))
                   for lane in self.lanes]
        for t in threads:
            t.start()
        stats, cpu = {}, None
        try:
            self.ready.wait(timeout=900)
            b.sync()
            if self.spec["library"]:
                self._make_xqueues()
            print("ready", flush=True)
            go = sys.stdin.readline().split()
            self.t_measure, self.t_end = float(go[1]), float(go[2])
            self.go.set()
            cpu = self._watch()
        except BaseException as e:  # noqa: B902 - reported in the result line
            self.errors.append("%s: %s" % (type(e).__name__, e))
        finally:
            self.go.set()
            self.stop.set()
            for t in threads:
                t.join(timeout=120)
            if any(lane.xq for lane in self.lanes):
                stats = self._teardown_xqueues()
            b.sync()
        row = self._results(cpu, stats)
        print("result " + json.dumps(_jsonable(
            {"vit": row["vit"], "resnet": row["resnet"], "stats": stats, "cpu_cores": cpu,
             "errors": [e.splitlines()[0] for e in self.errors]})), flush=True)
        return 1 if self.errors else 0

    def _join(self, threads):
        """Wait for the LLM thread (it ends after the window), then stop the lanes."""
        limit = self.b.args.duration + self.b.args.warmup + 120
        for t in threads:
            if t.name == "llm":
                t.join(timeout=limit)
        self.stop.set()
        for t in threads:
            t.join(timeout=120)
        return [t.name for t in threads if t.is_alive()]

    def _watch(self):
        """Sleep to the window, then measure CPU time and sample the LLM XQueue's co-run
        budget every 0.1 s; returns cores busy."""
        while time.perf_counter() < self.t_measure and not self.stop.is_set():
            time.sleep(min(0.05, max(0.0, self.t_measure - time.perf_counter())))
        c0, w0 = time.process_time(), time.perf_counter()
        a = self.b.args
        with contextlib.ExitStack() as tracing:
            if a.trace and self.spec["library"] and xsched is not None:
                # The lows' process of a -2p mode writes its own file (MODE-lows.json).
                name = self.name + ("" if self.with_llm else "-lows")
                os.makedirs(a.trace, exist_ok=True)
                tracing.enter_context(xsched.trace(os.path.join(a.trace, name + ".json")))
            t_untrace = w0 + a.trace_seconds
            while not self.stop.is_set():
                now = time.perf_counter()
                if now >= t_untrace:
                    # Written now, inside the window, by this thread: a traced mode's
                    # cpu_cores and its first seconds are perturbed by the trace.
                    tracing.close()
                if now >= self.t_end:
                    break
                if self.xq_llm is not None:
                    s = self.xq_llm.stats()
                    self.samples.append((s.corun_budget_ns, s.slowdown_permille,
                                         s.pace_eighths, now - self.t_measure))
                time.sleep(min(0.1, max(0.0, self.t_end - now)))
        c1, w1 = time.process_time(), time.perf_counter()
        return (c1 - c0) / (w1 - w0) if w1 > w0 else None

    def _results(self, cpu, stats):
        lo, hi = self.t_measure, self.t_end
        row = {"type": "mode", "mode": self.name, "cpu_cores": cpu,
               "llm": None, "vit": None, "resnet": None}
        if self.with_llm:
            meas = [r for r in self.served if lo <= r[0] < hi]
            ttft = [(r[2] - r[0]) * 1e3 for r in meas]
            tpot_req, steps = [], []
            for _, _, t_first, reads in meas:
                tpot_req.append((reads[-1] - t_first) * 1e3 / len(reads))
                prev = t_first
                for t in reads:
                    steps.append((t - prev) * 1e3)
                    prev = t
            busy = sum(max(0.0, min(r[3][-1], hi) - max(r[1], lo)) for r in self.served)
            arrived = sum(1 for x in self.arrivals if lo <= x < hi)
            row["llm"] = {
                "requests": len(meas),
                "backlog": arrived - len(meas),
                "ttft_p50_ms": pct(ttft, 50), "ttft_p99_ms": pct(ttft, 99),
                "ttft_mean_ms": statistics.fmean(ttft) if ttft else None,
                "tpot_p50_ms": pct(tpot_req, 50),  # over requests' mean time per token
                "tpot_p99_ms": pct(steps, 99),  # over every decode step
                "tpot_step_p50_ms": pct(steps, 50),
                "tpot_request_p99_ms": pct(tpot_req, 99),
                "tpot_max_ms": max(steps) if steps else None,
                "busy": busy / (hi - lo),
                "step_parts": step_parts([x for x in self.parts if lo <= x[0] < hi]),
            }
        for lane in self.lanes:
            n = sum(1 for t in lane.done if lo <= t <= hi)
            row[lane.name] = {"iterations": n, "per_s": n / (hi - lo), "unit": lane.unit}
        if self.samples:
            budgets = [math.inf if x[0] == UNLIMITED else x[0] / 1e3 for x in self.samples]
            row["corun_budget_us"] = {"median": pct(budgets, 50), "min": min(budgets),
                                      "max": max(budgets), "last": budgets[-1],
                                      "samples": len(budgets)}
            paces = [x[2] for x in self.samples]
            row["pace_eighths"] = {"median": pct(paces, 50), "min": min(paces),
                                   "max": max(paces)}
            # What the controller gives, one scalar: eighths of slices, then co-run us.
            row["level_timeline"] = [(round(x[3], 2), x[2] if not x[0] else
                                      8 + (math.inf if x[0] == UNLIMITED else x[0] / 1e3))
                                     for x in self.samples]
        if stats:
            row["xqueue_stats"] = stats
            if "llm" in stats:
                row["slowdown"] = stats["llm"]["slowdown_permille"] / 1000.0
        row["stream_priorities"] = self.priorities
        row["objective"] = self.spec["objective"]
        row["corun_us"] = self.spec["corun"]
        row["capture"] = self.spec["capture"]
        return row


# ----------------------------------------------------------------------------------------
# The benchmark
# ----------------------------------------------------------------------------------------

class Bench:
    def __init__(self, args, with_llm=True):
        self.args = args
        self.cuda = not args.smoke
        if self.cuda:
            if not torch.cuda.is_available():
                raise SystemExit("llm_serve.py needs a CUDA GPU (--smoke runs on the CPU)")
            torch.cuda.set_device(args.device)
            self.device = torch.device("cuda", args.device)
            torch.backends.cudnn.benchmark = True
            least, greatest = torch.cuda.Stream.priority_range()
            self.prio_range = (least, greatest)
        else:
            self.device = torch.device("cpu")
            torch.set_num_threads(1)  # three model threads on a small machine
            self.prio_range = None
        torch.manual_seed(args.seed)
        dtype = torch.float16 if self.cuda else torch.float32
        progress("building the models")
        self.llm, self.llm_params = None, 0
        if with_llm:  # not in the lows' process of the -2p modes
            with torch.no_grad():
                self.llm = Decoder(args, self.device, dtype).eval()
            self.llm_params = sum(p.numel() for p in self.llm.parameters())
        vit, res, self.low_desc = low_models(args.smoke)
        self.vit = VitTraining(vit, args.vit_batch, args.image, self.device)
        self.resnet = ResNetInference(res, args.resnet_batch, args.image, self.device)
        self.s_llm = None
        self.capacity = None  # requests/s the LLM serves alone back to back
        if args.rate is None and with_llm:
            self.capacity = self.calibrate()
            args.rate = args.load * self.capacity
        elif args.rate is None:
            args.rate = 1.0  # the lows' process of a -2p mode: no arrivals of its own
        rng = random.Random(args.seed)
        self.schedule = []  # arrival offsets from a run's start, the same in every mode
        t = 0.0
        step = args.warmup + args.step_at if args.step_at is not None else math.inf
        while True:
            rate = args.rate if t < step else args.step_load * self.capacity
            t += rng.expovariate(rate)
            if t >= args.warmup + args.duration:
                break
            self.schedule.append(t)

    def calibrate(self, n=6):
        """The LLM's capacity alone: requests per second served back to back (after two
        warm-up requests), no library, no other work."""
        a = self.args
        progress("measuring the LLM alone: %d requests back to back" % n)
        self.make_streams(False, [])
        srv = Server(self.llm, a, self.device, self.s_llm, a.seed)
        with torch.no_grad(), self.on(self.s_llm):
            for i in range(2):
                srv.request(i)
            t0 = time.perf_counter()
            for i in range(n):
                srv.request(i)
            dt = time.perf_counter() - t0
        srv.close()
        self.sync()
        cap = n / dt
        progress("the LLM alone serves %.2f requests/s (%.1f ms each)" % (cap, 1e3 / cap))
        return cap

    # streams, or stand-ins on the CPU
    def make_streams(self, prio, lanes):
        if not self.cuda:
            self.s_llm = None
            return
        greatest = self.prio_range[1]  # PyTorch's greatest (its pools), the row records it
        self.s_llm = torch.cuda.Stream(priority=greatest) if prio else torch.cuda.Stream()
        for lane in lanes:
            lane.stream = torch.cuda.Stream()  # priority 0, the least PyTorch gives

    def on(self, stream):
        return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()

    def mark(self, stream):
        if stream is None:
            return None
        ev = torch.cuda.Event(blocking=True)  # waiting threads sleep, not spin
        ev.record(stream)
        return ev

    def stream_sync(self, stream):
        if stream is not None:
            stream.synchronize()

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def runs(self, mode):
        """(row name, with the LLM, low lanes) of each run of @mode."""
        both = [self.vit, self.resnet]
        if mode_spec(mode)["procs"]:
            return [(mode, True, [])]  # the lanes run in the second process
        if mode == "alone":
            return [("alone:llm", True, []), ("alone:vit", False, [self.vit]),
                    ("alone:resnet", False, [self.resnet]), ("alone:lows", False, both)]
        return [(mode, True, both)]

    def header(self):
        a = self.args
        if self.cuda:
            dev = torch.cuda.get_device_name(a.device)
            cuda = torch.version.cuda
        else:
            dev, cuda = "CPU (smoke: no GPU, figures mean nothing)", None
        lib = xsched.library_path if xsched is not None else "not loaded (%s)" % XSCHED_ERROR
        info = {"type": "run", "device": dev, "torch": torch.__version__, "cuda": cuda,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                "library": lib, "llm_parameters": self.llm_params,
                "capacity_per_s": self.capacity, "rate_per_s": a.rate,
                "stream_priority_range": self.prio_range, "low_models": self.low_desc,
                "argv": sys.argv[1:],
                "config": {k: v for k, v in vars(a).items() if k != "jsonl"}}
        lines = [
            "# llm_serve: %s, torch %s%s, %s" % (dev, torch.__version__,
                                                ", CUDA %s" % cuda if cuda else "",
                                                info["date"]),
            "# libxsched: %s" % lib,
            "# LLM: decoder %d layers, d_model %d, %d heads, MLP 4x, vocabulary %d: %.3g M "
            "parameters, %s; batch %d, prompt %d, %d decode steps (%s), %.2f req/s Poisson "
            "(seed %d)%s" % (a.layers, a.d_model, a.heads, a.vocab, self.llm_params / 1e6,
                             "fp16" if self.cuda else "fp32", a.batch, a.prompt_len,
                             a.decode_steps, "CUDA graph replays" if self.cuda and not
                             a.eager else "eager", a.rate, a.seed,
                             "" if self.capacity is None else
                             ": load %.2f of the %.2f req/s it serves alone" % (
                                 a.load, self.capacity)),
            "# low lanes, %s: ViT training batch %d%s; ResNet inference batch %d, %dx%d"
            % (self.low_desc, a.vit_batch, ", AdamW, bf16 autocast" if self.cuda else "",
               a.resnet_batch, a.image, a.image),
            "# each mode: %.1f s warm-up, %.1f s measured; stream priorities: %s" % (
                a.warmup, a.duration,
                "PyTorch's range least %d, greatest %d" % self.prio_range
                if self.prio_range else "none (CPU: prio is native; host queues)"),
            "# TTFT: arrival to first tokens on the host. TPOT p50: median over requests "
            "of their mean time per token; p99: over every decode step. (x): over alone. "
            "ViT, ResNet: per s (kept: over alone). CPU: cores busy.",
        ]
        return info, lines


COLS = "%-16s %9s %17s %17s %17s %17s %17s %17s %5s  %s"


def table_header():
    return COLS % ("mode", "reqs/bklg", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms",
                   "TPOT p99 ms", "ViT steps/s", "ResNet fwd/s", "CPU",
                   "LLM xq: slowdown, co-run budget us med [min-max]")


def _cell(v, ref, nd=2, kept=False):
    if v is None:
        return "-"
    if ref:
        return "%.*f %s" % (nd, v, ("(%.2f)" if kept else "(%.2fx)") % (v / ref))
    return "%.*f" % (nd, v)


def _us(v):
    return "unl" if v == math.inf else "%.0f" % v


def format_row(row, ref):
    if "error" in row:
        return "%-16s ERROR: %s" % (row["mode"], row["error"].splitlines()[0])
    llm, vit, res = row["llm"], row["vit"], row["resnet"]
    rl = ref.get("llm") or {}

    def lc(key):
        return _cell(llm[key], rl.get(key)) if llm else "-"

    reqs = "%d/%d" % (llm["requests"], llm["backlog"]) if llm else "-"
    vit_c = _cell(vit["per_s"], (ref.get("vit") or {}).get("per_s"), kept=True) \
        if vit else "-"
    res_c = _cell(res["per_s"], (ref.get("resnet") or {}).get("per_s"), kept=True) \
        if res else "-"
    xq = ""
    if "slowdown" in row:
        xq = "slowdown %s" % ("%.2f" % row["slowdown"] if row["slowdown"] else "-")
        b = row.get("corun_budget_us")
        if b:
            xq += ", budget %s [%s-%s]" % (_us(b["median"]), _us(b["min"]), _us(b["max"]))
        pc = row.get("pace_eighths")
        if pc and pc["max"]:
            xq += ", pace %d/8 [%d-%d]" % (pc["median"], pc["min"], pc["max"])
    cpu = "%.2f" % row["cpu_cores"] if row["cpu_cores"] is not None else "-"
    return COLS % (row["mode"], reqs, lc("ttft_p50_ms"), lc("ttft_p99_ms"),
                   lc("tpot_p50_ms"), lc("tpot_p99_ms"), vit_c, res_c, cpu, xq)


def pacing_line(busy, x):
    """What the lows keep if the slack of objective @x is spent evenly: the idle share of
    the LLM alone, plus its busy share x (1 - 1/x)."""
    busy = min(max(busy, 0.0), 1.0)
    return (1.0 - busy) + busy * (1.0 - 1.0 / x)


def settle_time(timeline, step_at):
    """Seconds from the load step at @step_at (s into the window) until the controller's
    level (eighths of slices, then 8 + co-run us) stays within one notch of where it ends
    (the median of the last 2 s): within 1 eighth, or within a factor 1.5 of the co-run
    budget. None without samples after the step."""
    after = [(t, v) for t, v in timeline if t >= step_at]
    if len(after) < 5:
        return None
    t_last = after[-1][0]
    final = pct([v for t, v in after if t >= t_last - 2.0], 50)

    def near(v):
        if v <= 8 or final <= 8:
            return abs(v - final) <= 1
        return final / 1.5 <= v <= final * 1.5 or v == final

    t_ok = None
    for t, v in after:
        if not near(v):
            t_ok = None
        elif t_ok is None:
            t_ok = t
    return None if t_ok is None else t_ok - step_at


def targets(rows, ref, args=None):
    """Issue 42's targets (and issue 36's co-run one) for this scenario, where their modes
    ran: (what, figure, met)."""
    out = []
    rl = ref.get("llm") or {}
    if not rl.get("tpot_p99_ms") or not (ref.get("vit") and ref.get("resnet")):
        return out

    def get(mode):
        r = rows.get(mode)
        return r if r and "error" not in r and r.get("llm") else None

    def x(r, key):
        v = r["llm"][key]
        return v / rl[key] if v is not None and rl.get(key) else None

    def kept(r, lane):
        if not r.get(lane) or not ref[lane].get("per_s"):
            return 0.0  # the lane did not run in this row (an alone row)
        return r[lane]["per_s"] / ref[lane]["per_s"]

    prio = get("prio")
    busy = rl.get("busy")
    for mode, r in rows.items():
        if not get(mode) or "error" in r or mode.startswith("alone"):
            continue
        p99 = x(r, "tpot_p99_ms")
        if p99 is None:
            continue
        fig = "TPOT p99 %.2fx alone, ViT kept %.2f, ResNet kept %.2f" % (
            p99, kept(r, "vit"), kept(r, "resnet"))
        obj = r.get("objective")
        if obj is not None:
            out.append(("%s: TPOT p99 <= %gx alone" % (mode, obj), fig, p99 <= obj))
            if busy is not None:
                line = pacing_line(busy, obj)
                refs = [("", {k: ref[k] for k in ("vit", "resnet")})]
                lows = ref.get("lows")
                if lows and lows["vit"]["per_s"] and lows["resnet"]["per_s"]:
                    refs.append((", kept taken over the lanes together without the LLM", lows))
                for over, base in refs:
                    kv, kr = (r[k]["per_s"] / base[k]["per_s"]
                              if r.get(k) and base[k].get("per_s") else 0.0
                              for k in ("vit", "resnet"))
                    out.append(("%s: each low lane kept >= 0.8 of the pacing line %.2f (busy "
                                "%.2f)%s" % (mode, line, busy, over),
                                "ViT %.2f (%.2f of it), ResNet %.2f (%.2f)" % (
                                    kv, kv / line, kr, kr / line),
                                min(kv, kr) >= 0.8 * line))
            if obj == 2.0 and prio:
                out.append(("%s: lows kept >= prio's (%.2f, %.2f)" % (
                    mode, kept(prio, "vit"), kept(prio, "resnet")), fig,
                    kept(r, "vit") >= kept(prio, "vit") and
                    kept(r, "resnet") >= kept(prio, "resnet")))
            if args is not None and args.step_at is not None and r.get("level_timeline"):
                st = settle_time(r["level_timeline"], args.step_at)
                out.append(("%s: the controller settles within 2 s of the load step "
                            "(%g -> %g at %g s)" % (mode, args.load, args.step_load,
                                                   args.step_at),
                            "settled after %s" % ("%.1f s" % st if st is not None else
                                                  "never in the window"),
                            st is not None and st <= 2.0))
        elif mode == "xsched":
            out.append(("xsched (defaults): TPOT p99 <= 1.2x alone", fig, p99 <= 1.2))
        elif r.get("capture") == "lib":
            app = get(mode[:-len("-lib")])
            if app:
                a50, l50 = app["llm"]["tpot_p50_ms"], r["llm"]["tpot_p50_ms"]
                a99, l99 = app["llm"]["tpot_p99_ms"], r["llm"]["tpot_p99_ms"]
                out.append(("%s: the library's priority, XQueue made before capture, "
                            "within 10%% of the application's (%s) time per token" % (
                                mode, mode[:-len("-lib")]),
                            "TPOT p50 %.2f vs %.2f ms (%.2fx), p99 %.2f vs %.2f ms" % (
                                l50, a50, l50 / a50, l99, a99),
                            l50 <= 1.1 * a50))
        elif mode == "xsched-2p" and get("xsched"):
            one = get("xsched")
            kv, kr = kept(one, "vit"), kept(one, "resnet")
            out.append(("xsched-2p: TPOT p99 <= 1.2x alone, lows kept >= 0.90 of xsched's "
                        "in one process (%.2f, %.2f)" % (kv, kr), fig,
                        p99 <= 1.2 and kept(r, "vit") >= 0.9 * kv and
                        kept(r, "resnet") >= 0.9 * kr))
        elif r.get("corun_us") is not None and prio and r.get("capture") == "app":
            pp50, pp99 = x(prio, "tpot_p50_ms"), x(prio, "tpot_p99_ms")
            p50 = x(r, "tpot_p50_ms")
            if None not in (pp50, pp99, p50):
                out.append(("%s: TPOT p50 and p99 <= prio's (%.2fx, %.2fx)" % (
                    mode, pp50, pp99), "TPOT p50 %.2fx, " % p50 + fig,
                    p50 <= pp50 and p99 <= pp99))
    return out


def add_ratios(row, ref):
    """The row's figures over alone's (x_alone) and the lanes' kept fractions."""
    if "error" in row:
        return
    rl = ref.get("llm") or {}
    if row.get("llm") and rl:
        row["x_alone"] = {k: row["llm"][k] / rl[k] if row["llm"][k] and rl.get(k) else None
                          for k in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                                    "tpot_p99_ms")}
    row["kept"] = {lane: row[lane]["per_s"] / ref[lane]["per_s"]
                   for lane in ("vit", "resnet")
                   if row.get(lane) and ref.get(lane) and ref[lane]["per_s"]}


def _jsonable(v):
    if isinstance(v, float) and math.isinf(v):
        return "unlimited"
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def lows_child(args):
    """The second process of a -2p mode: the low lanes (Run.execute_child)."""
    sys.setswitchinterval(args.switch_interval)
    bench = Bench(args, with_llm=False)
    spec = mode_spec(args.lows_child)
    return Run(bench, args.lows_child, spec, False, [bench.vit, bench.resnet]).execute_child()


def main(argv=None):
    args = parse_args(argv)
    if args.lows_child:
        return lows_child(args)
    sys.setswitchinterval(args.switch_interval)
    t_start = time.perf_counter()
    bench = Bench(args)
    info, lines = bench.header()
    out = open(args.jsonl, "w") if args.jsonl else None

    def emit(obj):
        if out is not None:
            out.write(json.dumps(_jsonable(obj)) + "\n")
            out.flush()

    emit(info)
    for line in lines:
        print(line)
    print(table_header(), flush=True)
    rows, ref, failed = {}, {}, False
    for mode in args.modes:
        spec = mode_spec(mode)
        for name, with_llm, lanes in bench.runs(mode):
            progress("%s: setting up (%.0f s so far)" % (name, time.perf_counter() - t_start))
            try:
                row = Run(bench, name, spec, with_llm, lanes).execute()
            except Exception as e:  # noqa: B902 - reported, the other modes go on
                if isinstance(e, RunFailed):
                    row = {"error": str(e), "error_detail": e.detail}
                else:
                    row = {"error": "%s: %s" % (type(e).__name__, e),
                           "error_detail": traceback.format_exc()}
                row = dict(type="mode", mode=name, **row)
                failed = True
                progress("%s: FAILED: %s" % (name, row["error_detail"] or row["error"]))
            if name == "alone:lows":  # the lanes together, over each alone
                if "error" not in row:
                    ref["lows"] = {lane: row[lane] for lane in ("vit", "resnet")}
                shown = ref
            elif name.startswith("alone:"):
                if "error" not in row:
                    ref[name.split(":")[1]] = row[name.split(":")[1]]
                shown = {}  # the references themselves
            else:
                shown = ref
                add_ratios(row, ref)
            rows[name] = row
            print(format_row(row, shown), flush=True)
            emit(row)
            if "error" not in row:
                progress("%s: done in %.0f s" % (name, row["wall_s"]))
            try:
                bench.sync()
            except Exception as e:  # noqa: B902 - a sticky device error: later runs say so
                progress("after %s: synchronize failed: %s: %s" % (name, type(e).__name__, e))
    busy = (ref.get("llm") or {}).get("busy")
    if busy is not None:
        print("\n# the LLM alone is busy %.2f of the time: the pacing line (what the lows keep "
              "if an objective x is spent evenly) is %s" % (busy, ", ".join(
                  "%.2f at %g" % (pacing_line(busy, o), o) for o in args.objectives)))
    if ref.get("lows") and ref.get("vit") and ref.get("resnet"):
        print("# the low lanes together without the LLM keep ViT %.2f and ResNet %.2f of each "
              "alone (the GPU they share): the most the lows can keep beside it" % tuple(
                  ref["lows"][k]["per_s"] / ref[k]["per_s"] for k in ("vit", "resnet")))
    if bench.cuda:
        verdicts = targets(rows, ref, args)
        if verdicts:
            print()
            for what, fig, met in verdicts:
                print("%-7s %s: %s" % ("MET" if met else "MISSED", what, fig))
                emit({"type": "target", "what": what, "figure": fig, "met": met})
    else:
        print("\n(smoke run on the CPU: no target is judged)")
    print("# total %.0f s" % (time.perf_counter() - t_start), flush=True)
    if out is not None:
        out.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
