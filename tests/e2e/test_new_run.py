#!/usr/bin/python3
"""A new run of a job (same id): its rank's row starts afresh.  A real rank
runs a window and is killed; a new process of the same job and rank attaches:
its row shows it attached with no window and no trace path of the run before,
whose start and stop stay in the rank's events; a coordinator restart keeps it
so."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "newrun-%d" % os.getpid()


def row(c):
    return [r for r in c.status(JOB)["ranks"] if r["rank"] == 0][0]


def test():
    with Cluster("newrun") as c:
        c.start_coordinator(heartbeat_ms=500)
        n = c.node("n0")
        n.start_agent()
        old = n.start_rank(JOB, 0, rate=50)
        top = c.wait_ranks(JOB, 1, min_step=5)["progress"]["max_step"]
        w = c.add_window(JOB, {"start_step": top + 10, "stop_step": top + 12})
        c.wait_window_done(JOB, w["id"], [0])
        r = row(c)
        check(r["window"] == w["id"] and r["output_dir"],
              "the first run's row: %s" % r)
        pid = old.pid
        old.kill9()
        new = n.start_rank(JOB, 0, rate=50)
        r = wait_for(lambda: (lambda x: x if x.get("pid") == new.pid else None)(
            row(c)), 20, "the new run's process in the row")
        check(r["pid"] != pid and r["state"] == "attached" and
              r["window"] is None and r["output_dir"] is None,
              "the new run's row: %s" % r)
        check(events_of(r, "started", w["id"]) and
              events_of(r, "stopped", w["id"]),
              "the first run's events went: %s" % r.get("events"))
        log("a new run: a fresh row, the run before in its events")
        c.coord.stop()
        c.start_coordinator(heartbeat_ms=500)
        time.sleep(1.0)
        r = row(c)
        check(r["window"] is None and r["output_dir"] is None,
              "after a restart, the row: %s" % r)


if __name__ == "__main__":
    main(test)
