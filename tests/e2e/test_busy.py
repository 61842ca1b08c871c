#!/usr/bin/python3
"""The straggler synchronous training hides, found by its busy time: real
PyTorch (Debian's, CPU) DistributedDataParallel over gloo, four ranks on four
nodes (an agent each, the real coordinator), the unmodified loop of
tests/support/ddp_rank.py under dynprof.torch's hook, which marks each rank's
entry into the gradients' all-reduce.  Every rank waits for the slowest at
each step, so all show the same step and rate: only the busy time (step begin
to that mark) tells the straggler.

  slowed    rank 2 computes 3 times longer from the first step: it alone is
            flagged ("busy", its busy time over the job's median) within a
            bounded number of steps, with its score against the fastest, and
            as the rank last to arrive at the all-reduce at most steps
            ("last", from the marks' times, four agents' clocks); no
            rank lags; a rule fires on it and profiles it and one peer (both
            write a trace of the window's steps, the others nothing).
  balanced  the same run, nobody slowed, as many steps: nobody is flagged at
            any time.
  halfway   rank 3 computes twice as long throughout, rank 1 1.25 times as
            long from the middle of a longer run on: still not the slowest,
            and under the
            30% over the median that "busy" asks, rank 1 is found by the
            change test against its own history ("busy_change"), which never
            flagged it before the change; rank 3, slow from the start, is
            "busy" and not "busy_change".

The compute is a sleep (as a GPU kernel holds the CPU that waits for it), so
that the four ranks do not fight over the machine's two cores.  Every wait is
on a condition with a deadline far past what an idle machine needs."""

import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (PYTHON, Cluster, Failure, check, events_of,  # noqa: E402
                     log, main, skip, start_ddp_ranks)

WORLD = 4
STEP_MS = 20
# The ranks' niceness (as root): a training job owns its node's cores, while
# this machine runs other tests beside; a rank starved by them for seconds
# would be, truly, a straggler.
NICE = -10
# Steps of each run: the slowed run's rule fires in a few seconds, its window
# (3 steps, from the next multiple of 50: far enough ahead that the ranks are
# not past it when it reaches them) runs well before the end.
STEPS = 300
# The slowed rank is flagged within this many steps of the first: ticks every
# 0.5 s, about 12 steps a second for the slowed job.
DETECT_STEPS = 100
# The halfway run: long enough after its change for about 25 ticks, twice
# what the change test needs on an idle machine for a 25% rise.
HALFWAY_STEPS = 600



def have_torch():
    try:
        import importlib.util
        return importlib.util.find_spec("torch") is not None
    except ImportError:
        return False


def start_job(c, nodes, job, slow=None, steps=STEPS):
    """Starts the WORLD ranks of job for steps steps, rank r on nodes[r];
    slow: {rank: (factor, from step)}.  Returns the Procs."""
    return start_ddp_ranks(c, nodes, job, steps, slow=slow, nice=NICE,
                           step_ms=STEP_MS)


def stragglers(c, job):
    code, s = c.http("GET", "/v1/jobs/%s/stragglers" % job)
    return s if code == 200 else None


def watch(c, job, procs, seen, until=None, timeout=240):
    """Polls job's stragglers until until(s) holds (returned) or, with until
    None, every rank exits (the last judgement of all WORLD ranks' busy times
    returned); every flagged rank goes into seen[rank] (the first judgement
    that flagged it).  A rank that fails is a failure."""
    deadline = time.monotonic() + timeout
    full = None
    while True:
        for p in procs:
            if not p.alive() and p.p.returncode != 0:
                raise Failure("%s exited %s:\n%s" % (
                    p.name, p.p.returncode, p.output()[-3000:]))
        s = stragglers(c, job)
        if s is not None:
            for w in s.get("worst_ranks", []):
                seen.setdefault(w["rank"], dict(w, median_step=s[
                    "median_step"]))
            if s["busy_ranks"] == WORLD:
                full = s
            if until is not None and until(s):
                return s
        if until is None and all(not p.alive() for p in procs):
            return full
        if time.monotonic() > deadline:
            raise Failure("%s: timed out; last stragglers %s" % (job, s))
        time.sleep(0.1)


def finish(procs, steps=STEPS):
    for p in procs:
        p.wait(240)
        check(p.p.returncode == 0 and "done %d" % steps in p.output(),
              "%s: %s" % (p.name, p.output()[-3000:]))


def slowed(c, nodes):
    job = "busy-slow-%d" % os.getpid()
    code, rule = c.http("POST", "/v1/jobs/%s/rules" % job, {
        "when": "straggler", "steps": 3, "peers": 1, "roundup": 50,
        "min_interval_s": 600, "max_per_hour": 1})
    check(code == 201, "rule: %s %s" % (code, rule))
    procs = start_job(c, nodes, job, slow={2: (3.0, 1)})
    seen = {}
    s = watch(c, job, procs, seen, until=lambda s: s["busy_ranks"] == WORLD
              and any(w["rank"] == 2 and "busy" in w["reasons"]
                      for w in s["worst_ranks"]))
    for p in procs:
        check("marks_comm True" in p.output(), "%s: no DDP hook" % p.name)
    w = [w for w in s["worst_ranks"] if w["rank"] == 2][0]
    log("rank 2 flagged at median step %d: %s" % (s["median_step"], w))
    check(s["median_step"] <= DETECT_STEPS,
          "flagged at step %d, not within %d" % (s["median_step"],
                                                 DETECT_STEPS))
    # No rank lags: each rank's step is judged at the time its agent sampled
    # and sent it, however late the report came (four agents, each late as
    # the machine's load makes it), so ranks in lockstep show no lag.
    check(w["busy_over_median"] > 2.0 and w["busy_score"] < 0.5 and
          w["lag"] <= 2 and "lag" not in w["reasons"],
          "rank 2: %s" % w)
    check(s["lagging"] == 0 and s["busy"] == 1 and s["no_busy"] == 0,
          "stragglers: %s" % s)
    # The same rank arrives last at the gradients' all-reduce at most steps:
    # found by that signal too, within as many steps.
    s = watch(c, job, procs, seen, until=lambda s: any(
        w["rank"] == 2 and "last" in w["reasons"] for w in s["worst_ranks"]))
    w = [w for w in s["worst_ranks"] if w["rank"] == 2][0]
    la = s["last_arriver"]
    log("rank 2 last to arrive at median step %d: %s" % (s["median_step"],
                                                         la))
    check(s["median_step"] <= DETECT_STEPS,
          "last arriver at step %d, not within %d" % (s["median_step"],
                                                      DETECT_STEPS))
    check(la["rank"] == 2 and la["flagged"] and la["share"] > 0.5 and
          la["steps"] * 2 > la["of"] >= 16 and la["late_ms"] > 10 and
          w["last_share"] == la["share"] and s["arrive_ranks"] == WORLD,
          "last arriver: %s, rank 2: %s" % (la, w))
    # dynprofctl and /metrics say it too: the signals, and by how much.
    out = c.ctl("stragglers", job).stdout
    row = [ln.split() for ln in out.splitlines() if ln.split()[:2] == ["2",
                                                                      "n2"]]
    check(row and row[0][-1] == "busy,last" and float(row[0][-3]) > 2.0 and
          "busy time (step begin to its first collective): 4 ranks" in out
          and "last to arrive at the collective: rank 2, at " in out,
          "dynprofctl stragglers:\n%s" % out)
    with urllib.request.urlopen(c.url() + "/metrics", timeout=10) as r:
        m = r.read().decode()
    check(('dynprof_stragglers{job="%s",reason="busy"} 1' % job) in m and
          ('dynprof_stragglers{job="%s",reason="last"} 1' % job) in m and
          ('dynprof_job_last_arrival_share{job="%s",rank="2"} ' % job) in m
          and ('dynprof_job_busy_ranks{job="%s",busy="yes"} 4' % job) in m
          and ('dynprof_job_busy_worst_ratio{job="%s"} ' % job) in m,
          "metrics: %s" % [ln for ln in m.splitlines() if job in ln])

    r = c.wait_rule_fired(job)
    wid = r["last_window"]
    st = c.status(job)
    win = [x for x in st["windows"] if x["id"] == wid][0]
    targets = sorted(int(x) for x in win["ranks"].split(","))
    check(len(targets) == 2 and 2 in targets, "window ranks %s" % targets)
    log("rule fired: window %d, steps %d-%d, ranks %s" % (
        wid, win["start_step"], win["stop_step"], targets))
    watch(c, job, procs, seen)
    finish(procs)
    st = c.wait_window_done(job, wid, targets, timeout=120)
    for rk in range(WORLD):
        r = [x for x in st["ranks"] if x["rank"] == rk][0]
        started, stopped = (events_of(r, "started", wid),
                            events_of(r, "stopped", wid))
        out = nodes[rk].out
        traces = [os.path.join(d, f) for d, _, fs in os.walk(out)
                  for f in fs if f.endswith(".pt.trace.json")]
        if rk in targets:
            check(len(started) == 1 and len(stopped) == 1 and
                  started[0]["step"] == win["start_step"] and
                  stopped[0]["step"] == win["stop_step"] and traces,
                  "rank %d: started %s stopped %s traces %s" % (
                      rk, started, stopped, traces))
        else:
            check(not started and not traces,
                  "rank %d, not targeted, ran window %d" % (rk, wid))
    check(sorted(seen) == [2], "flagged: %s" % seen)
    log("slowed: rank 2 alone flagged, profiled with rank %d" % [
        t for t in targets if t != 2][0])
    # The ranks gone, nobody is last to arrive (the window of steps judged
    # while they ran once stayed, flagged, on the page and in /metrics).
    g = watch(c, job, [], {}, until=lambda g: g["ranks_judged"] == 0,
              timeout=60)
    with urllib.request.urlopen(c.url() + "/metrics", timeout=10) as r:
        m = r.read().decode()
    check(g["arrive_ranks"] == 0 and g["last_arriver"] is None and
          ('dynprof_stragglers{job="%s",reason="last"} 0' % job) in m,
          "ranks gone, still judged: %s" % g)
    return s


def balanced(c, nodes):
    job = "busy-even-%d" % os.getpid()
    procs = start_job(c, nodes, job)
    seen = {}
    watch(c, job, procs, seen, until=lambda s: s["busy_ranks"] == WORLD)
    s = watch(c, job, procs, seen)
    finish(procs)
    check(not seen, "balanced run flagged %s" % seen)
    check(s is not None and s["ranks"] == 0, "stragglers %s" % s)
    log("balanced: %d steps, nobody flagged (median busy %s ms)" % (
        STEPS, s["busy_median_ms"]))


def halfway(c, nodes):
    job = "busy-half-%d" % os.getpid()
    half = HALFWAY_STEPS // 2
    procs = start_job(c, nodes, job, slow={3: (2.0, 1), 1: (1.25, half)},
                      steps=HALFWAY_STEPS)
    seen = {}

    def before(s):
        return s["median_step"] >= half - 10
    s = watch(c, job, procs, seen, until=before)
    check(1 not in seen, "rank 1 flagged before its change: %s" % seen)
    s = watch(c, job, procs, seen, until=lambda s: any(
        w["rank"] == 1 and "busy_change" in w["reasons"]
        for w in s["worst_ranks"]))
    w = [w for w in s["worst_ranks"] if w["rank"] == 1][0]
    w3 = [w for w in s["worst_ranks"] if w["rank"] == 3]
    log("rank 1 found by the change test at median step %d: %s; rank 3: %s"
        % (s["median_step"], w, w3))
    check(w["busy_rise"] is not None and w["busy_rise"] > 1.15, "rank 1: %s"
          % w)
    check(w3 and "busy" in w3[0]["reasons"] and
          "busy_change" not in w3[0]["reasons"], "rank 3: %s" % w3)
    watch(c, job, procs, seen)
    finish(procs, HALFWAY_STEPS)
    check(set(seen) <= {1, 3}, "flagged: %s" % seen)


def test():
    if not have_torch():
        return skip("no torch in %s" % PYTHON)
    with Cluster("busy") as c:
        c.start_coordinator(heartbeat_ms=500)
        nodes = [c.node("n%d" % i) for i in range(WORLD)]
        for n in nodes:
            n.start_agent()
        which = sys.argv[1:] or ["slowed", "balanced", "halfway"]
        for name in which:
            log("--- %s" % name)
            {"slowed": slowed, "balanced": balanced,
             "halfway": halfway}[name](c, nodes)


if __name__ == "__main__":
    main(test)
