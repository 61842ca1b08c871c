#!/usr/bin/python3
"""Time windows through the real library, agents and coordinator: two "nodes"
(two agents) whose clocks differ, the second's read 3 s ahead
(--test-clock-offset, the machine's clock untouched).  Each agent measures its
offset to the coordinator from the heartbeats: /v1/nodes shows about 0 and
3000 ms, the second as the worst, and a time window warns of it (over its
tolerance).  Ranks without steps (dynprof_poll() in C, the Python poller
thread), on both nodes, start and stop within the tolerance of the wall time
asked: without the agents' correction the second node's would start 3 s
early.  A stepping rank given a time window starts at the first step that
begins after its start and stops at the end of the last step before its end,
its events saying both the times and the steps.  dynprofctl trace --at --for
--wait returns once every rank started and stopped the window, not before its
end, and says so.  Bad times are refused with a 400 that says why."""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, events_of, log, main,  # noqa: E402
                     parse_time, rfc3339, wait_for)

JOB = "timewin-%d" % os.getpid()
OFFSET_MS = 3000            # the second node's clock, ahead
SLACK_MS = 400              # a start or stop after its time, on a loaded box
RATE = 50                   # the stepping rank's steps a second


def nodes(c):
    code, body = c.http("GET", "/v1/nodes")
    check(code == 200, "GET /v1/nodes: %s %s" % (code, body))
    return body


def offsets_known(c):
    body = nodes(c)
    got = {n["node"]: n.get("clock_offset_ms") for n in body["nodes"]}
    if got.get("n0") is None or got.get("n1") is None:
        return None
    return body


def event_times(c, wid, ranks):
    """{rank: (started event, stopped event)} once every rank stopped."""
    st = c.status(JOB)
    out = {}
    for r in st["ranks"]:
        if r["rank"] not in ranks:
            continue
        a, b = events_of(r, "started", wid), events_of(r, "stopped", wid)
        if not a or not b:
            return None
        out[r["rank"]] = (a[0], b[0])
    return out if len(out) == len(ranks) else None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def window(c, body):
    code, ans = c.http("POST", "/v1/jobs/%s/windows" % JOB, body)
    check(code == 201, "POST %s: %s %s" % (body, code, ans))
    return ans


def test():
    with Cluster("timewin") as c:
        run(c)


def run(c):
    c.start_coordinator(heartbeat_ms=200)
    n0, n1 = c.node("n0"), c.node("n1")
    n0.start_agent()
    n1.start_agent(extra=["--test-clock-offset", str(OFFSET_MS * 1000000)])
    # Ranks without steps: C polls on both nodes, Python pollers on both.
    n0.start_rank(JOB, 0, poll_ms=5)
    n1.start_rank(JOB, 1, poll_ms=5)
    n0.start_rank(JOB, 2, poll_ms=5, python=True)
    n1.start_rank(JOB, 3, poll_ms=5, python=True)
    c.wait_ranks(JOB, 4, min_step=-1)

    body = wait_for(lambda: offsets_known(c), 30, "both nodes' clock offsets",
                    interval=0.2)
    off = {n["node"]: n["clock_offset_ms"] for n in body["nodes"]}
    log("clock offsets %s, worst %s" % (off, body["worst_clock_offset"]))
    check(abs(off["n0"]) < 50, "n0's offset %s ms, want about 0" % off["n0"])
    check(abs(off["n1"] - OFFSET_MS) < 50, "n1's offset %s ms, want about %d"
          % (off["n1"], OFFSET_MS))
    check(body["worst_clock_offset"]["node"] == "n1",
          "worst offset %s" % body["worst_clock_offset"])
    out = c.ctl("nodes").stdout
    check("worst clock offset: +" in out and "(node n1)" in out,
          "dynprofctl nodes: %s" % out)

    # The step-less ranks, on both clocks.
    at = time.time() + 2.5
    ans = window(c, {"at": rfc3339(at), "duration_ms": 1500,
                     "tolerance_ms": 100})
    wid = ans["id"]
    warned = [w["node"] for w in ans.get("clock_warnings", [])]
    check(warned == ["n1"], "clock warnings %s, want n1 only" %
          ans.get("clock_warnings"))
    check(ans.get("at") == rfc3339(at) and ans.get("duration_ms") == 1500,
          "window %s" % ans)
    got = wait_for(lambda: event_times(c, wid, {0, 1, 2, 3}), 30,
                   "the step-less ranks' window", interval=0.2)
    for rank, (a, b) in sorted(got.items()):
        t0, t1 = parse_time(a["time"]), parse_time(b["time"])
        log("rank %d: started %+.0f ms, stopped %+.0f ms from the times "
            "asked" % (rank, (t0 - at) * 1000, (t1 - at - 1.5) * 1000))
        check(at - 0.05 <= t0 <= at + SLACK_MS / 1000.0,
              "rank %d started %.0f ms from its time" % (rank,
                                                          (t0 - at) * 1000))
        check(at + 1.5 - 0.05 <= t1 <= at + 1.5 + SLACK_MS / 1000.0,
              "rank %d stopped %.0f ms from its time" % (
                  rank, (t1 - at - 1.5) * 1000))
    st = c.status(JOB)
    w = [x for x in st["windows"] if x["id"] == wid][0]
    check([x["node"] for x in w.get("clock_warnings", [])] == ["n1"],
          "status warnings %s" % w.get("clock_warnings"))
    out = c.ctl("status", JOB).stdout
    check(("at %s for 1500 ms" % rfc3339(at)) in out and
          ("window %d: node n1's clock is 30" % wid) in out,
          "dynprofctl status: %s" % out)

    # A node whose agent comes after the window: its rank runs before it,
    # so the agent's hello says the job and the schedule comes with the
    # welcome, before any heartbeat measured the offset (2 s behind): the
    # agent moves the window once it knows it.
    n2 = c.node("n2")
    n2.start_rank(JOB, 5, poll_ms=5)
    at = time.time() + 4.0
    wid = window(c, {"at": rfc3339(at), "duration_ms": 1000,
                     "ranks": "5"})["id"]
    n2.start_agent(extra=["--test-clock-offset", str(-2000 * 1000000)])
    got = wait_for(lambda: event_times(c, wid, {5}), 30,
                   "the late node's window", interval=0.2)
    t0 = parse_time(got[5][0]["time"])
    log("rank 5 (a late agent, 2 s behind): started %+.0f ms" % (
        (t0 - at) * 1000))
    check(at - 0.05 <= t0 <= at + SLACK_MS / 1000.0,
          "rank 5 started %.0f ms from its time" % ((t0 - at) * 1000))
    check("time windows moved by" in n2.agent.output(),
          "the late agent did not move the window: %s" %
          n2.agent.output()[-2000:])

    # A stepping rank: the first step after the start, the last before the
    # end; the events give both times and steps.
    n0.start_rank(JOB, 4, rate=RATE)
    c.wait_ranks(JOB, 1, min_step=5)
    at = time.time() + 2.0
    wid = window(c, {"at": rfc3339(at), "duration_ms": 1000,
                     "ranks": "4"})["id"]
    got = wait_for(lambda: event_times(c, wid, {4}), 30,
                   "the stepping rank's window", interval=0.2)
    a, b = got[4]
    t0, t1 = parse_time(a["time"]), parse_time(b["time"])
    steps = b["step"] - a["step"] + 1
    log("rank 4: steps %d-%d (%d), started %+.0f ms, stopped %+.0f ms" % (
        a["step"], b["step"], steps, (t0 - at) * 1000,
        (t1 - at - 1.0) * 1000))
    check(at - 0.005 <= t0 <= at + 2.0 / RATE + SLACK_MS / 1000.0,
          "started %.0f ms from its time" % ((t0 - at) * 1000))
    check(t1 <= at + 1.0 + SLACK_MS / 1000.0,
          "stopped %.0f ms after its end" % ((t1 - at - 1.0) * 1000))
    check(t1 >= at + 1.0 - 3.0 / RATE - 0.05,
          "stopped %.0f ms before its end" % ((at + 1.0 - t1) * 1000))
    check(0.7 * RATE <= steps <= RATE + 1, "%d steps in 1 s at %d/s" % (
        steps, RATE))
    # Its profiler (the start callback, through dynprof_window_info())
    # knew it a time window, when it started and for how long.
    path = os.path.join(n0.out, "rank4_window%d" % wid, "trace.json")
    tr = wait_for(lambda: (lambda t: t if t and "reason" in t else None)(
        read_json(path)), 10, "rank 4's trace.json closed")
    check("at" in tr and abs(parse_time(tr["at"]) - at) < 0.05 and
          tr.get("duration_ms") == 1000 and
          tr.get("started_at_step") == a["step"],
          "rank 4's trace of window %d: at %s for %s ms from step %s" % (
              wid, tr.get("at"), tr.get("duration_ms"),
              tr.get("started_at_step")))

    # dynprofctl trace --at --for --wait: returns once every step-less rank
    # started and stopped the window (not before its end), saying so.
    t_ask = time.time()
    r = c.ctl("trace", JOB, "--at", "+2s", "--for", "1500ms", "--ranks",
              "0-3", "--wait", "--timeout", "60", timeout=90)
    t_back = time.time()
    log("dynprofctl trace --wait (%.1f s): rc %d, %s" % (
        t_back - t_ask, r.returncode, r.stdout))
    check(r.returncode == 0, "dynprofctl trace --at --wait exited %d: %s" % (
        r.returncode, r.stdout))
    m = re.search(r"^window (\d+): at ", r.stdout, re.M)
    check(m is not None, "dynprofctl trace --wait: %s" % r.stdout)
    wid = int(m.group(1))
    check(("window %d: all 4 targeted ranks stopped" % wid) in r.stdout and
          ("window %d: 4 targeted, 4 started, 4 stopped, 0 skipped, 0 failed"
           % wid) in r.stdout, "dynprofctl trace --wait: %s" % r.stdout)
    got = event_times(c, wid, {0, 1, 2, 3})
    check(got is not None, "dynprofctl trace --wait returned before every "
          "rank stopped window %d: %s" % (wid, c.status(JOB)["ranks"]))
    w = [x for x in c.status(JOB)["windows"] if x["id"] == wid][0]
    at = parse_time(w["at"])
    check(t_back >= at + 1.5 and max(parse_time(b["time"]) for _, b in
                                     got.values()) <= t_back,
          "dynprofctl trace --wait returned %.0f ms after the window's "
          "start, before its end or a rank's stop" % ((t_back - at) * 1000))

    # Bad requests, refused with why.
    now = time.time()
    for body, field, why in (
            ({"at": rfc3339(now - 60), "duration_ms": 1000}, "at",
             "in the past"),
            ({"at": rfc3339(now + 30 * 86400), "duration_ms": 1000}, "at",
             "ahead"),
            ({"at": "tomorrow", "duration_ms": 1000}, "at", "RFC 3339"),
            ({"at": "2026-13-01T00:00:00Z", "duration_ms": 1000}, "at",
             "out of range"),
            ({"at": "+10s", "duration_ms": 0}, "duration_ms", "from 1 ms"),
            ({"at": "+10s", "duration_ms": 10 ** 12}, "duration_ms",
             "from 1 ms"),
            ({"at": "+10s"}, "duration_ms", "needs duration_ms"),
            ({"at": "+10s", "duration_ms": 1000, "start_step": 5}, "start_step",
             "takes no start_step"),
            ({"duration_ms": 1000, "start_step": 5, "stop_step": 6},
             "duration_ms", "go with at"),
            ({"at": "+10s", "duration_ms": 1000, "tolerance_ms": 10 ** 9},
             "tolerance_ms", "tolerance_ms")):
        code, ans = c.http("POST", "/v1/jobs/%s/windows" % JOB, body)
        check(code == 400 and ans.get("field") == field and
              why in str(ans.get("error")),
              "%s: %s %s, want 400 on %s saying %r" % (body, code, ans, field,
                                                       why))
    # A window that overlaps a time window still to run: refused.
    window(c, {"at": "+60s", "duration_ms": 5000})
    code, ans = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                       {"at": "+62s", "duration_ms": 1000})
    check(code == 409 and "overlaps" in str(ans.get("error")),
          "overlap: %s %s" % (code, ans))
    out = c.ctl("trace", JOB, "--at", "+120s", "--for", "2s").stdout
    check("at " in out and "for 2000 ms" in out, "dynprofctl trace: %s" % out)


if __name__ == "__main__":
    main(test)
