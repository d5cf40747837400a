#!/usr/bin/env python3
"""Where the lower queues' time goes while a protected queue paces them.

Reads a timeline trace of the library (XSCHED_TRACE, ``xsched.trace``, or
``llm_serve.py --trace DIR``: Chrome trace-event JSON, doc/architecture.md "Timeline
trace") and prints, for each lower XQueue, the share of the pacing slices' time (and of
the protected queue's units outside slices, and of the rest) in which it was

- running:  at least one of its commands committed and not yet complete (the device may
            run it; the time it queues on the stream behind its own earlier work counts);
- held:     none running, but a command submitted and not committed (the library holds
            it: waiting at its counter at Lv2, or not yet enqueued);
- empty:    nothing submitted that is not complete (its thread had not given it work:
            the host side, an interpreter's lock, a synchronization of its own).

A slice the lows leave empty is slack the host side did not use; one they spend held is
slack the library did not hand out. The protected queue is the one whose track has
"slice" events. Usage: trace_slices.py TRACE.json [...]
"""
import json
import sys


def intervals_union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(iv, lo, hi):
    """Length of the union @iv inside [lo, hi)."""
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in iv)


def load(doc):
    """The parts of a trace document (the parsed JSON) that the analysis reads."""
    ev = doc["traceEvents"]
    names, slices, units, q = {}, [], [], {}
    for e in ev:
        tid = e.get("tid")
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[tid] = e["args"]["name"]
            continue
        if tid is None or tid == 0:
            continue
        r = q.setdefault(tid, {"submit": {}, "commit": {}, "complete": {}})
        name, ts = e.get("name"), e.get("ts", 0.0)
        if e.get("ph") == "b":
            r["commit"].setdefault(e["args"]["seq"], ts)
        elif e.get("ph") == "e":
            r["complete"][e["args"]["seq"]] = ts
        elif name == "submit":
            r["submit"][e["args"]["a"]] = ts
        elif name == "slice":
            slices.append((tid, ts, ts + e["args"]["a"] / 1000.0))
        elif name == "unit":
            units.append((tid, ts, e["args"]["a"]))
    return names, slices, units, q


def states(r, t_hi):
    """The queue's running and busy (running or held) intervals, in us."""
    run, busy = [], []
    for seq, t_sub in r["submit"].items():
        t_c = r["commit"].get(seq)
        t_e = r["complete"].get(seq, t_hi)
        if t_c is not None:
            run.append((t_c, t_e))
        busy.append((t_sub, t_e))
    # Commands submitted before the trace began: their commits are all we have.
    for seq, t_c in r["commit"].items():
        if seq not in r["submit"]:
            run.append((t_c, r["complete"].get(seq, t_hi)))
            busy.append((t_c, r["complete"].get(seq, t_hi)))
    return intervals_union(run), intervals_union(busy)


def complement(iv, lo, hi):
    """[lo, hi) less the union @iv."""
    out, cur = [], lo
    for a, b in intervals_union(iv):
        if a >= hi:
            break
        if a > cur:
            out.append((cur, a))
        cur = max(cur, b)
    if cur < hi:
        out.append((cur, hi))
    return out


def analyse(doc):
    """What report() prints, as a dict (None where the trace has no pacing slices):
    window_us, protected (its track's name), slices, slice_median_us, slice_us, unit_us,
    and lows: one dict per lower XQueue with name, commands, and for "slices", "units"
    (inside the protected units, outside slices) and "outside" (the rest) the shares
    (running, held, empty) of that time."""
    names, slices, units, q = load(doc)
    prot = {s[0] for s in slices}
    if not prot:
        return None
    pt = sorted(prot)[0]
    kinds = [[t for r in q.values() for t in r[k].values()]
             for k in ("submit", "commit", "complete")]
    if not any(kinds):
        return None
    t_lo = min(min(ts) for ts in kinds if ts)
    t_hi = max(max(ts) for ts in kinds if ts)
    if doc.get("otherData", {}).get("dropped"):
        # Each thread's ring dropped its oldest events, and submits, commits and
        # completions are recorded by different threads: start where all three are kept.
        t_lo = max(min(ts) for ts in kinds if ts)
    sl = intervals_union([(max(a, t_lo), min(b, t_hi)) for tid, a, b in slices
                          if tid == pt and b > t_lo and a < t_hi])
    # The protected queue's units: from the begin (a=1) to the completion of the last
    # command submitted before the end call (a=0: the end's boundary), in order.
    pr = q.get(pt, {"submit": {}, "complete": {}})
    subs = sorted((t, seq) for seq, t in pr["submit"].items())
    u_iv, open_at, k = [], [], 0
    for tid, ts, a in sorted(units, key=lambda x: x[1]):
        if tid != pt:
            continue
        if a == 1:
            open_at.append(ts)
        elif open_at:
            while k < len(subs) and subs[k][0] <= ts:
                k += 1
            end = pr["complete"].get(subs[k - 1][1], ts) if k else ts
            u_iv.append((open_at.pop(0), max(ts, end)))
    u_iv = intervals_union(u_iv)
    # Inside units, outside slices; and outside both.
    unit_only = [(a, b) for ua, ub in u_iv for a, b in complement(sl, ua, ub)]
    outside = complement(u_iv + sl, t_lo, t_hi)
    lens = sorted(b - a for tid, a, b in slices if tid == pt)
    out = {"window_us": t_hi - t_lo, "protected": names.get(pt, hex(pt)),
           "slices": len(lens), "slice_median_us": lens[len(lens) // 2],
           "slice_us": overlap(sl, t_lo, t_hi), "unit_us": overlap(u_iv, t_lo, t_hi),
           "lows": []}
    for tid, r in sorted(q.items()):
        if tid == pt or not (r["submit"] or r["commit"]):
            continue
        run, busy = states(r, t_hi)

        def split(part):
            tot = sum(b - a for a, b in part)
            if tot <= 0:
                return (0.0, 0.0, 0.0)
            ru = sum(overlap(run, a, b) for a, b in part)
            bu = sum(overlap(busy, a, b) for a, b in part)
            return (ru / tot, (bu - ru) / tot, 1 - bu / tot)

        out["lows"].append({"name": names.get(tid, hex(tid)), "commands": len(r["submit"]),
                            "slices": split(sl), "units": split(unit_only),
                            "outside": split(outside)})
    return out


def report(path):
    with open(path) as f:
        doc = json.load(f)
    a = analyse(doc)
    if a is None:
        print("%s: no pacing slices in this trace" % path)
        return
    meta, win = doc.get("otherData", {}), a["window_us"]
    print("%s: %.0f ms traced (%s events, %s dropped)" % (
        path, win / 1e3, meta.get("events"), meta.get("dropped")))
    if meta.get("dropped"):
        print("  (events were dropped: the window starts where every kind of event is kept; "
              "raise XSCHED_TRACE_EVENTS to see more)")
    print("  protected %s: %d slices (median %.0f us), open %.0f ms (%.2f of the window); "
          "units %.0f ms (%.2f)" % (a["protected"], a["slices"], a["slice_median_us"],
                                    a["slice_us"] / 1e3, a["slice_us"] / win,
                                    a["unit_us"] / 1e3, a["unit_us"] / win))
    print("  %-40s %22s %22s %22s" % ("lower XQueue: shares running held empty",
                                      "in slices", "in units, no slice", "no unit"))
    for low in a["lows"]:
        print("  %-40s %22s %22s %22s  (%d commands)" % (
            low["name"][:40], *("%6.2f %6.2f %6.2f" % low[k]
                                for k in ("slices", "units", "outside")),
            low["commands"]))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    for p in argv[1:]:
        report(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
