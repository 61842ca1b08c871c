#!/usr/bin/python3
"""How closely the ranks of a wall-clock window start: 128 ranks on 4 nodes (an
agent each, the real coordinator, heartbeat 200 ms), two of the nodes' clocks
read off (--test-clock-offset: +2 s and -1.5 s, the machine's clock untouched),
each rank either polling (dynprof-train-sim --poll-ms, a loop without steps)
or stepping (--steps-per-sec).  Each run asks one time window 3 s ahead
("at", "duration_ms": 1000) and reads every rank's started and stopped events
(the ranks' wall clock, in ms): the spread (max - min) of the starts, each
start's distance from the time asked, and the same for the stops.

usage: DYNPROF_BUILD_DIR=build /usr/bin/python3 bench/timewin.py
           [--ranks 128] [--nodes 4] [--mode poll|step] [--poll-ms 5]
           [--rate 50] [--repeats 3] [--json]
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
from cluster import Cluster, parse_time, rfc3339, wait_for  # noqa: E402

OFFSETS_MS = (0, 2000, 0, -1500)    # by node, cycling


def times(c, job, wid, n):
    """(starts, stops) of the window's n ranks, once each stopped."""
    st = c.status(job)
    starts, stops = [], []
    for r in st["ranks"]:
        ev = {e["kind"]: e for e in r.get("events", [])
              if e.get("window") == wid}
        if "started" in ev and "stopped" in ev:
            starts.append(parse_time(ev["started"]["time"]))
            stops.append(parse_time(ev["stopped"]["time"]))
    return (starts, stops) if len(starts) == n else None


def one_run(c, job, nranks, duration_ms):
    at = time.time() + 3.0
    code, w = c.http("POST", "/v1/jobs/%s/windows" % job,
                     {"at": rfc3339(at), "duration_ms": duration_ms})
    if code != 201:
        raise RuntimeError("POST window: %s %s" % (code, w))
    starts, stops = wait_for(lambda: times(c, job, w["id"], nranks), 60,
                             "every rank's window", interval=0.25)
    end = at + duration_ms / 1000.0
    ms = lambda x: round(x * 1000, 1)  # noqa: E731
    return {"start_spread_ms": ms(max(starts) - min(starts)),
            "start_from_at_ms": [ms(min(starts) - at), ms(max(starts) - at)],
            "stop_spread_ms": ms(max(stops) - min(stops)),
            "stop_from_end_ms": [ms(min(stops) - end), ms(max(stops) - end)],
            "warned_nodes": sorted(x["node"] for x in
                                   w.get("clock_warnings", []))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=128)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--mode", choices=("poll", "step"), default="poll")
    ap.add_argument("--poll-ms", type=int, default=5)
    ap.add_argument("--rate", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    job = "timewin-bench-%d" % os.getpid()
    runs = []
    with Cluster("timewin-bench") as c:
        c.start_coordinator(heartbeat_ms=200)
        nodes = []
        for i in range(a.nodes):
            n = c.node("n%d" % i)
            off = OFFSETS_MS[i % len(OFFSETS_MS)]
            n.start_agent(extra=["--test-clock-offset", str(off * 1000000)])
            nodes.append(n)
        for r in range(a.ranks):
            n = nodes[r % a.nodes]
            if a.mode == "poll":
                n.start_rank(job, r, poll_ms=a.poll_ms)
            else:
                n.start_rank(job, r, rate=a.rate)
        c.wait_ranks(job, a.ranks, timeout=120,
                     min_step=-1 if a.mode == "poll" else 1)
        code, body = c.http("GET", "/v1/nodes")
        offsets = {n["node"]: n.get("clock_offset_ms") for n in body["nodes"]}
        for i in range(a.repeats):
            runs.append(one_run(c, job, a.ranks, 1000))
            if not a.json:
                print("run %d: %s" % (i + 1, runs[-1]), flush=True)
    spreads = [r["start_spread_ms"] for r in runs]
    out = {"ranks": a.ranks, "nodes": a.nodes, "mode": a.mode,
           "poll_ms": a.poll_ms if a.mode == "poll" else None,
           "rate": a.rate if a.mode == "step" else None,
           "clock_offsets_ms": offsets, "runs": runs,
           "start_spread_ms_median": statistics.median(spreads),
           "start_spread_ms_max": max(spreads)}
    if a.json:
        print(json.dumps(out))
    else:
        print("%d ranks (%s) on %d nodes, offsets %s: start spread median "
              "%.1f ms, max %.1f ms" % (a.ranks, a.mode, a.nodes, offsets,
                                        out["start_spread_ms_median"],
                                        out["start_spread_ms_max"]))


if __name__ == "__main__":
    main()
