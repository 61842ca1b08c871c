#!/usr/bin/python3
"""Ranks that attach after a window naming ranks by what they are was made:
16 real ranks laid out as pp=4 x tp=4 on two nodes, the pp=3 ranks not there
yet and rank 4 killed when the windows are made.  A window of select tp=0
takes rank 4 when it comes back and rank 12 when it comes; a window of
one_per pp takes rank 12 for pp=3, and not rank 4 (pp=1 has rank 5 already).
Each profiles exactly those ranks.  The selector is stored with the window:
after a coordinator restart, a window of select pp=3 made while rank 13 was
away takes it when it comes back.  The labels of a job nobody scheduled
outlive the restart too (its ranks' rows)."""

import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, events_of, log, main,  # noqa: E402
                     wait_for)

JOB = "lateLabels-%d" % os.getpid()
IDLE = "idleLabels-%d" % os.getpid()     # a job nobody schedules
RATE = 10


def labels(rank):
    return "pp=%d,tp=%d" % (rank // 4, rank % 4)


def node_of(c, rank):
    return c.nodes["n%d" % (rank // 8)]


def start(c, rank, first_step=None):
    node_of(c, rank).start_rank(JOB, rank, rate=RATE, first_step=first_step,
                                labels=labels(rank))


def row(c, rank):
    r = [x for x in c.status(JOB)["ranks"] if x["rank"] == rank]
    return r[0] if r else None


def kill(c, rank):
    """Kills rank, waits until it is gone; returns the job's step."""
    node_of(c, rank).ranks[rank].kill9()
    wait_for(lambda: (row(c, rank) or {}).get("state") == "gone", 30,
             "rank %d gone" % rank)
    return step_now(c)


def window(c, wid):
    w = [x for x in c.status(JOB)["windows"] if x["id"] == wid]
    check(w, "window %d in the status" % wid)
    return w[0]


def wait_ranks_of(c, wid, want):
    return wait_for(lambda: window(c, wid) if window(c, wid)["ranks"] == want
                    else None, 30, "window %d ranks %s" % (wid, want),
                    interval=0.2)


def started(c, wid):
    return sorted(r["rank"] for r in c.status(JOB)["ranks"]
                  if events_of(r, "started", wid))


def step_now(c):
    """The job's highest step, once a live rank reported one."""
    def known():
        st = c.status(JOB)
        step = st["progress"]["max_step"]
        if step < 1:
            log("no step yet: progress %s, nodes %s" % (st["progress"],
                                                        st["nodes"]))
        return step if step >= 1 else None
    return wait_for(known, 30, "the job's step", interval=0.2)


def test():
    with Cluster("labelslate") as c:
        c.start_coordinator()
        for i in range(2):
            c.node("n%d" % i).start_agent()
        for r in range(12):
            start(c, r)
        for r in range(2):
            c.nodes["n1"].start_rank(IDLE, r, rate=RATE, labels="dp=%d" % r)
        c.wait_ranks(JOB, 12, timeout=60)
        c.wait_ranks(IDLE, 2, timeout=60)
        top = kill(c, 4)
        # 10 s ahead at 10 steps/s: time for the late ranks to come.
        w1 = c.add_window(JOB, {"select": "tp=0", "start_step": top + 100,
                                "stop_step": top + 101})
        w2 = c.add_window(JOB, {"one_per": "pp", "start_step": top + 110,
                                "stop_step": top + 111})
        check(w1["ranks"] == "0,8" and w2["ranks"] == "0,5,8", "made: %s %s" % (w1["ranks"], w2["ranks"]))
        sel = window(c, w1["id"]).get("selector")
        check(sel == {"select": "tp=0"}, "window 1's selector: %s" % sel)
        # Rank 4 comes back (a restart), pp=3 comes (the job grows).
        now = step_now(c)
        start(c, 4, first_step=now)
        for r in range(12, 16):
            start(c, r, first_step=now)
        wait_ranks_of(c, w1["id"], "0,4,8,12")
        wait_ranks_of(c, w2["id"], "0,5,8,12")
        c.wait_window_done(JOB, w2["id"], [0, 5, 8, 12], timeout=60)
        for w, want in ((w1, [0, 4, 8, 12]), (w2, [0, 5, 8, 12])):
            got = started(c, w["id"])
            check(got == want, "window %d: ranks %s started, want %s" % (
                w["id"], got, want))
        with urllib.request.urlopen(c.url() + "/metrics", timeout=10) as f:
            text = f.read().decode()
        grown = [l for l in text.splitlines()
                 if l.startswith("dynprof_select_grown_total ")]
        check(grown and int(grown[0].split()[1]) >= 2,
              "dynprof_select_grown_total: %s" % grown)
        # Each growth is an event of the stream, with the ranks it holds.
        with urllib.request.urlopen(c.url() + "/v1/jobs/%s/events" % JOB,
                                    timeout=10) as f:
            lines = [json.loads(l) for l in f.read().decode().splitlines()]
        for w, want in ((w1, "0,4,8,12"), (w2, "0,5,8,12")):
            got = [e.get("ranks") for e in lines if e.get("type") == "window"
                   and e.get("change") == "grown" and e["window"] == w["id"]]
            check(got and got[-1] == want, "window %d grown events %s, want "
                  "the last with ranks %s" % (w["id"], got, want))

        # The selector outlives the coordinator (its store).
        top = kill(c, 13)
        # 25 s ahead: a restart, and rank 13 attaching to the new
        # coordinator, under load.
        w3 = c.add_window(JOB, {"select": "pp=3", "start_step": top + 250,
                                "stop_step": top + 251})
        check(w3["ranks"] == "12,14-15", "window 3 made: %s" % w3["ranks"])
        log("restarting the coordinator")
        c.coord.stop()
        c.start_coordinator()
        start(c, 13, first_step=top)
        c.wait_ranks(JOB, 16, timeout=60)
        idle = c.wait_ranks(IDLE, 2, timeout=60)["ranks"]
        check(sorted((r["rank"], r.get("labels")) for r in idle) ==
              [(0, {"dp": "0"}), (1, {"dp": "1"})],
              "the labels of a job nobody scheduled, after a restart: %s" %
              [(r["rank"], r.get("labels")) for r in idle])
        wait_ranks_of(c, w3["id"], "12-15")
        c.wait_window_done(JOB, w3["id"], [12, 13, 14, 15], timeout=60)
        got = started(c, w3["id"])
        check(got == [12, 13, 14, 15], "window 3: ranks %s started" % got)


if __name__ == "__main__":
    main(test)
