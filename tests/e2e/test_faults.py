#!/usr/bin/python3
"""Faults during a window: the coordinator is SIGKILLed and restarted on the same
state directory and ports, then an agent is SIGKILLed and restarted.  The window
completes, and every targeted rank's start and stop appear in the status exactly
once (replays and re-reports are idempotent), with complete traces.  Rank 3,
on the node whose agent is killed, runs in Python (py_rank.py)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "faults-%d" % os.getpid()
RANKS = list(range(6))


def test():
    with Cluster("faults") as c:
        c.start_coordinator()
        nodes, where = c.start_grid(JOB, 3, 2, python=(3,))
        c.wait_ranks(JOB, 6, min_step=5)
        # 8 s long at 50 steps/s: both faults happen inside it.
        w = c.add_window(JOB, {"in_steps": 75, "steps": 400})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]

        def started_everywhere():
            s = c.status(JOB)
            return all(events_of(r, "started", wid) for r in s["ranks"]) and \
                len(s["ranks"]) >= 6
        wait_for(started_everywhere, 60, "window %d started on all ranks" % wid,
                 interval=0.1)

        log("SIGKILL the coordinator (pid %d) inside the window" % c.coord.pid)
        c.coord.kill9()
        time.sleep(0.5)
        c.start_coordinator()
        log("coordinator restarted on ports %d/%d, same state" % (
            c.agent_port, c.http_port))
        st = c.status(JOB)
        check([x for x in st.get("windows", []) if x.get("id") == wid],
              "window %d lost across the coordinator restart: %s" % (wid, st.get("windows")))

        victim = nodes[1]
        log("SIGKILL agent %s (pid %d) inside the window" % (victim.name, victim.agent.pid))
        victim.agent.kill9()
        time.sleep(0.5)
        victim.start_agent()
        log("agent %s restarted" % victim.name)

        st = c.wait_window_done(JOB, wid, RANKS, timeout=120)
        # A little longer, so late replays would show up as duplicates.
        time.sleep(1.5)
        st = c.status(JOB)
        ranks = {r["rank"]: r for r in st["ranks"]}
        for rank in RANKS:
            r = ranks.get(rank)
            check(r is not None, "rank %d missing from the status" % rank)
            started, stopped = events_of(r, "started", wid), events_of(r, "stopped", wid)
            check(len(started) == 1 and len(stopped) == 1,
                  "rank %d: %d started and %d stopped events for window %d (want 1 "
                  "each): %s" % (rank, len(started), len(stopped), wid, r.get("events")))
            check(started[0].get("step") == a and stopped[0].get("step") == b,
                  "rank %d: started at %s stopped at %s, window %d-%d" % (
                      rank, started[0].get("step"), stopped[0].get("step"), a, b))
            tr = where[rank].trace(rank, a, b)
            check(tr is not None and tr["steps"] == list(range(a, b + 1)),
                  "rank %d: trace incomplete" % rank)
        log("window %d (%d-%d) completed through both faults on all 6 ranks" % (wid, a, b))


if __name__ == "__main__":
    main(test)
