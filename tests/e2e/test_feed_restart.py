#!/usr/bin/python3
"""The status page's feed after a coordinator restart (SQLite, which keeps no
journal): a real coordinator, agent and rank run a window; the coordinator is
restarted; the job's event stream (what the page's feed reads first: every
event kept) holds the window's scheduling and end and the rank's start and stop
again, in time order, and the job's rate comes back."""

import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402

JOB = "feed-%d" % os.getpid()


def events(c):
    with urllib.request.urlopen(c.url() + "/v1/jobs/%s/events" % JOB,
                                timeout=10) as r:
        return [json.loads(line) for line in r.read().decode().splitlines()
                if line.strip()]


def said(evs, wid):
    """What the stream says of window wid: window changes and rank kinds."""
    return ([e.get("change") for e in evs
             if e.get("type") == "window" and e.get("window") == wid],
            [e.get("kind") for e in evs
             if e.get("type") == "rank" and e.get("window") == wid])


def test():
    with Cluster("feed") as c:
        c.start_node_ranks(JOB, [0])
        st = c.wait_ranks(JOB, 1, min_step=5)
        top = st["progress"]["max_step"]
        w = c.add_window(JOB, {"start_step": top + 10, "stop_step": top + 12})
        c.wait_window_done(JOB, w["id"], [0])
        wait_for(lambda: said(events(c), w["id"])[0][-1:] == ["done"], 10,
                 "the window done in the stream")
        before = said(events(c), w["id"])
        log("before the restart: %s" % (before,))

        c.coord.stop()
        c.start_coordinator(heartbeat_ms=500)
        evs = events(c)
        after = said(evs, w["id"])
        log("after the restart: %s" % (after,))
        check(after[0] == ["scheduled", "done"],
              "the window's changes after the restart: %s" % after[0])
        check("started" in after[1] and "stopped" in after[1],
              "rank 0's start and stop after the restart: %s" % after[1])
        times = [e["time"] for e in evs if "rev" in e]
        check(times == sorted(times), "not in time order: %s" % times)
        wait_for(lambda: (c.status(JOB)["stragglers"].get("median_rate")
                          or 0) > 0, 30, "the job's rate after the restart")


if __name__ == "__main__":
    main(test)
