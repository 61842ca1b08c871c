#!/usr/bin/python3
"""A rank that joins after a window has started is reported skipped, with the
window's start and stop steps and the step it was at; it never starts late."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "late-%d" % os.getpid()


def test():
    with Cluster("late") as c:
        n = c.start_node_ranks(JOB, (0, 1))
        st = c.wait_ranks(JOB, 2, min_step=5)
        # A long window (6 s): the late rank joins while it runs.
        w = c.add_window(JOB, {"in_steps": 50, "steps": 300})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]

        def started_on_both():
            s = c.status(JOB)
            return all(events_of(r, "started", wid) for r in s["ranks"]
                       if r["rank"] in (0, 1)) and len(s["ranks"]) >= 2
        wait_for(started_on_both, 60, "window %d started on ranks 0 and 1" % wid,
                 interval=0.1)
        # Rank 2 resumes from a checkpoint past the window's start.
        join = a + 20
        n.start_rank(JOB, 2, rate=50, first_step=join)

        def skipped():
            s = c.status(JOB)
            r = [x for x in s["ranks"] if x["rank"] == 2]
            return r and events_of(r[0], "skipped", wid) and r[0]
        r2 = wait_for(skipped, 30, "rank 2 reported skipped", interval=0.1)
        ev = events_of(r2, "skipped", wid)
        check(len(ev) == 1, "rank 2: %d skipped events: %s" % (len(ev), r2.get("events")))
        check(r2.get("state") == "skipped" and r2.get("window") == wid,
              "rank 2 state %s window %s, want skipped %d" % (
                  r2.get("state"), r2.get("window"), wid))
        e = ev[0]
        # Both steps: where the rank was (the event) and the window's start,
        # which the status gives with the window.
        check(e.get("step") is not None and e["step"] >= join,
              "skipped event step %s, the rank joined at %d" % (e.get("step"), join))
        sw = [x for x in c.status(JOB)["windows"] if x.get("id") == wid]
        check(sw and sw[0].get("start_step") == a and sw[0].get("stop_step") == b and
              a < e["step"], "status window %s, skipped at step %s" % (sw, e["step"]))
        if "start_step" in e:
            check(e["start_step"] == a and e.get("stop_step") == b,
                  "skipped event steps %s-%s, window %d-%d" % (
                      e.get("start_step"), e.get("stop_step"), a, b))
        check(not events_of(r2, "started", wid), "rank 2 started late: %s" % r2.get("events"))
        c.wait_window_done(JOB, wid, [0, 1], timeout=60)
        check(not os.path.exists(os.path.join(n.out, "rank2_start%d_stop%d" % (a, b))),
              "rank 2 wrote a trace for a window it skipped")
        log("rank 2 joined at step %d, window %d-%d: skipped (%s)" % (join, a, b, e))


if __name__ == "__main__":
    main(test)
