#!/usr/bin/python3
"""How fast the coordinator finds the straggler synchronous training hides, and
how often it flags a rank that is not one: real PyTorch DDP over gloo (CPU),
four ranks on four nodes (an agent each, the real coordinator, heartbeat
500 ms), the unmodified loop of tests/support/ddp_rank.py under dynprof.torch's
hook (20 ms of compute a step, held as a sleep).

Each run: rank 2 computes FACTOR times longer from step --slow-from on (1.0: a
balanced run); the job's stragglers are read every 0.1 s.  Detection: the time
and the steps from the first reading at or past the slowdown's step to the
first that flags rank 2 (and by which signal).  A false positive: any other
rank flagged at any reading, or rank 2 before its slowdown.

usage: DYNPROF_BUILD_DIR=build /usr/bin/python3 bench/busy.py
           [--factors 1.0,1.2,1.5,2,5] [--repeats 3] [--steps 300]
           [--slow-from 100] [--nice -10] [--json]
The ranks run at niceness --nice (as root), as a training job owns its node's
cores, away from a shared machine's other work.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
from cluster import Cluster, start_ddp_ranks  # noqa: E402

WORLD = 4
SLOW_RANK = 2



def run(c, nodes, job, factor, steps, slow_from, nice):
    procs = start_ddp_ranks(c, nodes, job, steps,
                            slow={SLOW_RANK: (factor, slow_from)}, nice=nice)
    t0 = found = None
    first = {}          # signal -> its first flag of rank 2: seconds, steps
    fp = {}             # rank -> the signals that flagged it falsely
    fp_readings = readings = 0
    deadline = time.monotonic() + 600
    while any(p.alive() for p in procs) and time.monotonic() < deadline:
        code, s = c.http("GET", "/v1/jobs/%s/stragglers" % job)
        now = time.monotonic()
        if code == 200 and s.get("busy_ranks") == WORLD:
            readings += 1
            step = s["median_step"]
            if t0 is None and factor != 1.0 and step >= slow_from:
                t0 = (now, step)
            bad = False
            for w in s["worst_ranks"]:
                if w["rank"] == SLOW_RANK and t0 is not None:
                    at = dict(seconds=now - t0[0], steps=step - t0[1] + 1)
                    if found is None:
                        found = dict(at, reasons=w["reasons"],
                                     over=w["busy_over_median"],
                                     rise=w["busy_rise"])
                    for why in w["reasons"]:
                        first.setdefault(why, at)
                else:
                    fp.setdefault(w["rank"], set()).update(w["reasons"])
                    bad = True
            fp_readings += bad
        time.sleep(0.1)
    for p in procs:
        p.stop()
        if p.p.returncode != 0 and "done %d" % steps not in p.output():
            raise RuntimeError("%s failed:\n%s" % (p.name, p.output()[-2000:]))
    return dict(factor=factor, found=found, first=first,
                false_ranks={str(k): sorted(v) for k, v in sorted(fp.items())},
                false_readings=fp_readings, readings=readings)


def spread(xs, fmt):
    """The median of xs and its range, "-" for none."""
    if not xs:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % (
        statistics.median(xs), min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--factors", default="1.0,1.2,1.5,2,5")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--slow-from", type=int, default=100)
    ap.add_argument("--nice", type=int, default=-10)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    factors = [float(f) for f in a.factors.split(",")]
    results = []
    with Cluster("busy-bench") as c:
        c.start_coordinator(heartbeat_ms=500)
        nodes = [c.node("n%d" % i) for i in range(WORLD)]
        for n in nodes:
            n.start_agent()
        for i in range(a.repeats):
            for f in factors:
                job = "bb-%s-%d-%d" % (str(f).replace(".", "_"), i,
                                       os.getpid())
                r = run(c, nodes, job, f, a.steps, a.slow_from, a.nice)
                results.append(r)
                print("factor %.1f run %d: %s" % (f, i + 1, json.dumps(r)),
                      flush=True)
    print()
    print("%-6s %-8s %-18s %-18s %-18s %-18s %s" % (
        "factor", "named", "any: s", "any: steps", "busy: s", "last: s",
        "false flags (runs, readings)"))
    for f in factors:
        rs = [r for r in results if r["factor"] == f]
        fp = sum(1 for r in rs if r["false_ranks"])
        fpr = sum(r["false_readings"] for r in rs)
        nread = sum(r["readings"] for r in rs)
        why = sorted(set(w for r in rs for v in r["false_ranks"].values()
                         for w in v))
        got = [r for r in rs if r["found"]]
        named = "-" if f == 1.0 else "%d/%d" % (len(got), len(rs))
        cols = [spread([r["found"]["seconds"] for r in got], "%.2f"),
                spread([r["found"]["steps"] for r in got], "%d")]
        for sig in ("busy", "last"):
            xs = [r["first"][sig]["seconds"] for r in rs if sig in r["first"]]
            cols.append("-" if not xs else "%d/%d %s" % (
                len(xs), len(rs), spread(xs, "%.2f")))
        print("%-6.1f %-8s %-18s %-18s %-18s %-18s %d/%d, %d/%d%s" % (
            f, named, cols[0], cols[1], cols[2], cols[3], fp, len(rs), fpr,
            nread, " (%s)" % ",".join(why) if why else ""))
        print("RESULT factor=%.1f runs=%d detected=%d first=%s "
              "runs_with_false_positive=%d false_readings=%d/%d" % (
                  f, len(rs), len(got), json.dumps(
                      [r["first"] for r in rs], sort_keys=True).replace(
                      " ", ""), fp, fpr, nread))
    if a.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
