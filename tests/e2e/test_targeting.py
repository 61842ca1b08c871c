#!/usr/bin/python3
"""Targeting: a window for ranks 0-3,9 of 12 (3 nodes x 4) runs on exactly
those: they start and stop it and write a trace; the other eight never start it,
write nothing, and the status shows no event of that window for them."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "target-%d" % os.getpid()
TARGET = [0, 1, 2, 3, 9]


def test():
    with Cluster("target") as c:
        c.start_coordinator()
        _, where = c.start_grid(JOB, 3, 4)
        c.wait_ranks(JOB, 12, min_step=5)
        w = c.add_window(JOB, {"in_steps": 100, "steps": 5, "ranks": "0-3,9"})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        check(w.get("ranks") == "0-3,9", "window ranks %r, want '0-3,9'" % w.get("ranks"))
        c.wait_window_done(JOB, wid, TARGET, timeout=90)
        # Every rank past the stop step: the others had every chance to start it.
        st = wait_for(lambda: (lambda s: s if all((r.get("step") or 0) > b + 5
                                                  for r in s["ranks"]) else None)(
            c.status(JOB)), 60, "every rank past step %d" % (b + 5), interval=0.2)
        ranks = {r["rank"]: r for r in st["ranks"]}
        check(sorted(ranks) == list(range(12)), "status ranks %s" % sorted(ranks))
        for rank in range(12):
            r = ranks[rank]
            started, stopped = events_of(r, "started", wid), events_of(r, "stopped", wid)
            tr = where[rank].trace(rank, a, b)
            if rank in TARGET:
                check(len(started) == 1 and len(stopped) == 1 and tr is not None and
                      tr["steps"] == list(range(a, b + 1)),
                      "targeted rank %d: events %s, trace %s" % (rank, r.get("events"), tr))
            else:
                check(not [e for e in r.get("events", []) if e.get("window") == wid],
                      "rank %d is not targeted but has events %s" % (rank, r.get("events")))
                check(not os.path.exists(os.path.join(
                    where[rank].out, "rank%d_start%d_stop%d" % (rank, a, b))),
                    "rank %d is not targeted but wrote a trace" % rank)
                check(r.get("state") not in ("profiling", "done", "skipped", "failed"),
                      "rank %d is not targeted but its state is %s" % (rank, r.get("state")))
        log("window %d (%d-%d) ran on ranks 0-3,9 only" % (wid, a, b))


if __name__ == "__main__":
    main(test)
