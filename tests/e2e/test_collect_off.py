#!/usr/bin/python3
"""A window asked for with "collect": false (dynprofctl trace --no-collect)
is not collected by an agent with --trace-store, even one SIGKILLed after
the window's end and restarted (the queue file remembers the window), while
the windows around it are; the summary and the traces index say so, and
still do after the coordinator restarts (SQLite)."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "colloff-%d" % os.getpid()
RANKS = [0, 1]


def test():
    with Cluster("colloff") as c:
        n, store, flags = c.start_collecting(1)
        for rank in RANKS:
            n.start_rank(JOB, rank, rate=50)
        c.wait_ranks(JOB, len(RANKS), min_step=5)

        def index(wid):
            code, body = c.http("GET", "/v1/jobs/%s/windows/%d/traces" %
                                (JOB, wid))
            check(code == 200, "traces index: %s %s" % (code, body))
            return body

        def collected(wid):
            return index(wid) if index(wid)["counts"]["collected"] == \
                len(RANKS) else None

        # A first window, collected as every window is by default.
        w1 = c.add_window(JOB, {"in_steps": 20, "steps": 10})
        c.wait_window_done(JOB, w1["id"], RANKS, timeout=60)
        wait_for(lambda: collected(w1["id"]), 60, "window 1 collected")

        # The window that says no; the agent SIGKILLed once it ended, so
        # that its successor finds the slots stopped in it.
        out = c.ctl("--json", "trace", JOB, "--in", "20", "--steps", "10",
                    "--no-collect")
        check(out.returncode == 0, "trace --no-collect: %s" % out.stdout)
        off = json.loads(out.stdout)["id"]
        log("window %d: collect false" % off)
        c.wait_window_done(JOB, off, RANKS, timeout=60)
        n.agent.kill9()
        queue = os.path.join(n.shm, "dynprof-agent.collect")
        lines = open(queue).read().splitlines()
        check("- %s %d" % (JOB, off) in lines, "the queue file does not "
              "remember window %d: %s" % (off, lines))
        n.start_agent(extra=flags)

        # A later window, collected: by then the agent has been through
        # the slots stopped in the window before it.
        w3 = c.add_window(JOB, {"in_steps": 20, "steps": 10})
        c.wait_window_done(JOB, w3["id"], RANKS, timeout=60)
        wait_for(lambda: collected(w3["id"]), 60, "window 3 collected")

        for wid, want in ((w1["id"], True), (off, False), (w3["id"], True)):
            d = os.path.join(store, JOB, "window-%d" % wid)
            check(os.path.isdir(d) == want, "window %d in the store: %s" %
                  (wid, os.listdir(os.path.join(store, JOB))))
        idx = index(off)
        check(idx["collect"] is False and idx["traces"] == [] and
              idx["counts"] == {"collected": 0, "collect_failed": 0,
                                "pending": 0}, "window %d index %s" %
              (off, idx))
        check(index(w3["id"])["collect"] is True, "window 3 index")
        for r in c.status(JOB)["ranks"]:
            check(not events_of(r, "collected", off) and
                  not events_of(r, "collect_failed", off),
                  "rank %d events of window %d: %s" % (r["rank"], off,
                                                       r["events"]))
        agent_log = open(os.path.join(n.dir, "agent.log")).read()
        check(("window %d rank" % off) not in agent_log,
              "the agent packed window %d" % off)

        def windows():
            code, st = c.http("GET", "/v1/jobs/%s" % JOB)
            check(code == 200, "summary %s %s" % (code, st))
            return {w["id"]: w["collect"] for w in st["windows"]}
        check(windows() == {w1["id"]: True, off: False, w3["id"]: True},
              "summary windows: %s" % windows())
        code, body = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                            {"in_steps": 20, "steps": 10, "collect": "no"})
        check(code == 400 and body.get("field") == "collect",
              "collect: \"no\" answered %s %s" % (code, body))

        # The coordinator restarted: the window still says no.
        c.coord.stop()
        c.start_coordinator()
        wait_for(lambda: windows() == {w1["id"]: True, off: False,
                                       w3["id"]: True} or None, 30,
                 "the summary's windows after a restart")
        check(index(off)["collect"] is False, "index after a restart")


if __name__ == "__main__":
    main(test)
