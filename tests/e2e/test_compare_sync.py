#!/usr/bin/python3
"""The straggler of synchronous training named from the ranks' traces: real
PyTorch (Debian's, CPU) DistributedDataParallel over gloo, three ranks on one
node (tests/support/ddp_rank.py under dynprof.torch's hook), rank 1 made slow
by a longer sleep in each step's compute.  Every rank waits for it in the
gradients' all-reduce, so all three steps last as long: step times alone
name no straggler.  One window is profiled by torch.profiler on all three,
the agent collects each trace into its --trace-store and reads, with each
step, its time in collectives (gloo:all_reduce on gloo's own thread) while
packing.  GET .../windows/W/compare says the steps agree, names rank 1 as
the straggler by its compute (it waits least), its compute far over the
median, the others waiting for it in gloo:all_reduce; `dynprofctl compare`
says the same.  Each rank's time in collectives is checked against torch's
own trace file (the spans' union within each step, computed here in
Python)."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (PYTHON, Cluster, check, log, main,  # noqa: E402
                     skip, start_ddp_ranks, wait_for)

JOB = "compare-sync-%d" % os.getpid()
WORLD = 3
SLOW_RANK = 1
STEP_MS = 10
SLOW = 25.0         # rank 1: 250 ms of compute a step, the others 10
STEPS = 60          # about 15 s of training; the window within it


def comm_per_step(path):
    """step -> us within the ProfilerStep#N span that some span whose name
    starts gloo: or c10d:: was open (their union), from torch's trace."""
    with open(path) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps, spans = {}, []
    for e in evs:
        if e.get("ph") != "X":
            continue
        name = e.get("name", "")
        lo = int(e["ts"] + 0.5)
        hi = lo + int(e["dur"] + 0.5)
        if name.startswith("ProfilerStep#"):
            steps[int(name[len("ProfilerStep#"):])] = (lo, hi)
        elif name.startswith("gloo:") or name.startswith("c10d::"):
            spans.append((lo, hi))
    out = {}
    for n, (a, b) in steps.items():
        covered, last = 0, a
        for lo, hi in sorted(spans):
            lo, hi = max(lo, last), min(hi, b)
            if hi > lo:
                covered += hi - lo
                last = hi
        out[n] = covered
    return out


def test():
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return skip("no torch in %s" % PYTHON)
    with Cluster("cmpsync") as c:
        n, _, _ = c.start_collecting(2)
        procs = start_ddp_ranks(c, [n] * WORLD, JOB, STEPS,
                                slow={SLOW_RANK: (SLOW, 1)}, step_ms=STEP_MS)
        c.wait_ranks(JOB, WORLD, timeout=120, min_step=2)
        w = c.add_window(JOB, {"in_steps": 4, "steps": 6})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        c.wait_window_done(JOB, wid, list(range(WORLD)), timeout=120)

        def compared():
            code, body = c.http("GET", "/v1/jobs/%s/windows/%d/compare" %
                                (JOB, wid))
            check(code == 200, "compare: %s %s" % (code, body))
            return body if body["counts"]["compared"] == WORLD else None
        body = wait_for(compared, 90, "every rank compared")
        log("compare: %s" % json.dumps({k: body.get(k) for k in (
            "counts", "step", "comm", "compute", "synchronous",
            "straggler", "slowest", "slowest_compute")}))

        ranks = {x["rank"]: x for x in body["ranks"]}
        for r in range(WORLD):
            d = os.path.join(n.out, "rank%d_start%d_stop%d" % (r, a, b))
            want = comm_per_step(os.path.join(d, "rank%d.pt.trace.json" % r))
            got = {s["step"]: s.get("comm_us") for s in ranks[r]["steps"]}
            check(len(want) >= 4 and got == want,
                  "rank %d: time in collectives by step %s, torch's trace "
                  "has %s" % (r, got, want))
        # Synchronous: the slow rank's step is no longer than the others'.
        check(body["synchronous"] and body["step"]["spread_pct"] < 5,
              "steps do not agree: %s" % body["step"])
        slow = ranks[SLOW_RANK]
        for r in range(WORLD):
            if r != SLOW_RANK:
                check(ranks[r]["comm_us"] > slow["comm_us"] + 150000 and
                      ranks[r]["comm_op"] == "gloo:all_reduce",
                      "rank %d waits no longer than rank %d: %s %s" % (
                          r, SLOW_RANK, ranks[r], slow))
        st = body["straggler"]
        check(st is not None and st["rank"] == SLOW_RANK and
              st["by"] == "compute" and st["waited_in"] == "gloo:all_reduce"
              and st["compute_us"] > SLOW * STEP_MS * 1000 * 0.9 and
              st["median_compute_us"] < st["compute_us"] / 3,
              "straggler: %s" % st)
        check(st["says"].startswith("rank %d: compute " % SLOW_RANK) and
              st["says"].endswith("; the others wait for it in "
                                  "gloo:all_reduce"), "says: %s" % st)
        check(body["slowest_compute"][0]["rank"] == SLOW_RANK,
              "slowest by compute: %s" % body["slowest_compute"])

        out = c.ctl("compare", JOB, str(wid))
        check(out.returncode == 0 and "straggler: %s" % st["says"] in
              out.stdout and "COMPUTE " in out.stdout,
              "dynprofctl compare:\n%s" % out.stdout)
        log("dynprofctl compare:\n%s" % out.stdout)
        for p in procs:
            p.wait(120)
            check(p.p.returncode == 0, "%s: %s" % (p.name,
                                                   p.output()[-2000:]))


if __name__ == "__main__":
    main(test)
