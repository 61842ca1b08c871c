#!/usr/bin/python3
"""The status page's feed after a coordinator restart (SQLite, which keeps no
journal): a real coordinator, agent and rank run a window; the coordinator is
restarted; the job's event stream (what the page's feed reads first: every
event kept) holds the window's scheduling and end and the rank's start and stop
again, in time order, and the job's rate comes back.  Every window event
(a window of steps run, a time window run, one cancelled) says after the
restart what it said before: its change, its generation (the generation of
the change, as the windows' rows keep it), its steps or times and ranks."""

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


def window_events(evs):
    """The window events of the stream, without their revision and time
    (the revisions start again; a rebuilt event is at its row's time)."""
    return [{k: v for k, v in e.items() if k not in ("rev", "time")}
            for e in evs if e.get("type") == "window"]


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
        tw = c.add_window(JOB, {"at": "+2s", "duration_ms": 500})
        c.wait_window_done(JOB, tw["id"], [0])
        far = c.add_window(JOB, {"start_step": top + 10 ** 6,
                                 "stop_step": top + 10 ** 6 + 4})
        check(c.http("DELETE", "/v1/jobs/%s/windows/%d" % (
            JOB, far["id"]))[0] == 200, "cancelling window %d" % far["id"])
        wait_for(lambda: [e for e in events(c) if e.get("window") ==
                          tw["id"] and e.get("change") == "done"] and
                 [e for e in events(c) if e.get("window") == far["id"] and
                  e.get("change") == "cancelled"], 10,
                 "the time window done and the cancel in the stream")
        wbefore = window_events(events(c))
        log("window events before the restart: %s" % wbefore)

        c.coord.stop()
        c.start_coordinator(heartbeat_ms=500)
        evs = events(c)
        after = said(evs, w["id"])
        log("after the restart: %s" % (after,))
        check(after[0] == ["scheduled", "done"],
              "the window's changes after the restart: %s" % after[0])
        wafter = window_events(evs)
        log("window events after the restart: %s" % wafter)
        check(len(wafter) == len(wbefore) and all(
            x in wafter for x in wbefore),
              "the window events after the restart differ:\n%s\nbefore:"
              "\n%s" % (wafter, wbefore))
        check(all(e["generation"] > 0 for e in wafter),
              "a window event of generation 0: %s" % wafter)
        check("started" in after[1] and "stopped" in after[1],
              "rank 0's start and stop after the restart: %s" % after[1])
        times = [e["time"] for e in evs if "rev" in e]
        check(times == sorted(times), "not in time order: %s" % times)
        wait_for(lambda: (c.status(JOB)["stragglers"].get("median_rate")
                          or 0) > 0, 30, "the job's rate after the restart")


if __name__ == "__main__":
    main(test)
