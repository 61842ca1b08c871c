#!/usr/bin/python3
"""Alignment: a relative window on 3 nodes x 4 ranks, the last rank of each node
in Python (py_rank.py over the dynprof binding), the others dynprof-train-sim.
Every rank starts at the same step and stops at the same step, its trace (written
by that very process) holds exactly those steps, and the coordinator's status
says so (one started and one stopped event per rank, at the window's steps,
state done, the output directory named after them)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "align-%d" % os.getpid()
PYTHON_RANKS = (3, 7, 11)


def test():
    with Cluster("align") as c:
        c.start_coordinator()
        _, where = c.start_grid(JOB, 3, 4, python=PYTHON_RANKS)
        c.wait_ranks(JOB, 12, min_step=5)
        w = c.add_window(JOB, {"in_steps": 100, "steps": 5})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        check(b == a + 4, "5 steps from %d should stop at %d, not %d" % (a, a + 4, b))
        st = c.wait_window_done(JOB, wid, range(12), timeout=90)
        ranks = {r["rank"]: r for r in st["ranks"]}
        for rank in range(12):
            r = ranks[rank]
            started, stopped = events_of(r, "started", wid), events_of(r, "stopped", wid)
            check(len(started) == 1 and len(stopped) == 1,
                  "rank %d: want one started and one stopped event for window %d, "
                  "got %s" % (rank, wid, r.get("events")))
            check(started[0].get("step") == a and stopped[0].get("step") == b,
                  "rank %d: started at %s, stopped at %s; the window is %d-%d" % (
                      rank, started[0].get("step"), stopped[0].get("step"), a, b))
            check(r.get("state") == "done", "rank %d: state %s, want done" % (
                rank, r.get("state")))
            want_dir = os.path.join(where[rank].out, "rank%d_start%d_stop%d" % (rank, a, b))
            check(r.get("output_dir") == want_dir, "rank %d: output_dir %s, want %s" % (
                rank, r.get("output_dir"), want_dir))
            tr = where[rank].trace(rank, a, b)
            check(tr is not None, "rank %d: no complete trace.json in %s" % (rank, want_dir))
            check(tr["steps"] == list(range(a, b + 1)) and tr["reason"] == "completed",
                  "rank %d: trace steps %s (%s), want %d-%d completed" % (
                      rank, tr["steps"], tr["reason"], a, b))
            proc = where[rank].ranks[rank]
            check((tr["job"], tr["rank"], tr["pid"], tr["window"],
                   tr["start_step"], tr["stop_step"]) ==
                  (JOB, rank, proc.pid, wid, a, b),
                  "rank %d: trace header %s, want job %s rank %d pid %d (%s) "
                  "window %d %d-%d" % (rank, {k: v for k, v in tr.items()
                                             if k != "steps"},
                                       JOB, rank, proc.pid, proc.name, wid, a, b))
        # The window itself is done once every rank reported its stop.
        wait_for(lambda: [x for x in c.status(JOB).get("windows", [])
                          if x.get("id") == wid and x.get("state") == "done"],
                 30, "window %d in state done" % wid, interval=0.2)
        log("12 ranks on 3 nodes (%s in Python) all started at step %d and stopped "
            "at step %d" % (", ".join(map(str, PYTHON_RANKS)), a, b))


if __name__ == "__main__":
    main(test)
