#!/usr/bin/python3
"""A trace store that fails: an S3 endpoint that takes a PUT and never
answers, one that refuses every PUT (403), and a local --trace-store on a
full file system (a 4 MiB tmpfs).  Each such rank ends in one
collect_failed event whose reason says why (a timeout, the store's answer,
ENOSPC), after a bounded number of tries (six for an upload, each a
--upload-stall long at most, three for packing), nothing left queued; the
other ranks' traces are collected meanwhile, the agent's loop serves a
second window while an upload hangs, and the ranks on the node step at the
pace they had before (measured)."""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, events_of, log, main, skip,  # noqa: E402
                     wait_for)
import s3 as s3mod  # noqa: E402

JOB = "upfail-%d" % os.getpid()
BUCKET = "traces"
PREFIX = "p"
STALL_S = 2
RATE = 50           # steps/s of every rank


def steps(c):
    return {r["rank"]: r.get("step") or 0 for r in c.status(JOB)["ranks"]}


def step_rate(c, ranks, secs):
    """Steps per second of each rank in ranks over secs seconds."""
    a, t0 = steps(c), time.monotonic()
    time.sleep(secs)
    b, t1 = steps(c), time.monotonic()
    return {r: (b[r] - a[r]) / (t1 - t0) for r in ranks}


def test():
    if os.geteuid() != 0:
        return skip("not root: no tmpfs to fill")
    s3mod.use_credentials()
    with Cluster("upfail") as c, s3mod.S3(c.dir, BUCKET) as s3:
        c.start_coordinator()
        n0, n1 = c.node("n0"), c.node("n1")
        store0 = os.path.join(c.dir, "store0")
        full = os.path.join(c.dir, "full")
        os.makedirs(store0)
        os.makedirs(full)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs",
                        full], check=True)
        try:
            run(c, s3, n0, n1, store0, full)
        finally:
            subprocess.run(["umount", "-l", full])


def run(c, s3, n0, n1, store0, full):
    n0.start_agent(extra=s3.agent_flags(
        store0, PREFIX, "--upload-stall", str(STALL_S), "--upload-backoff",
        "250ms"))
    n1.start_agent(extra=["--trace-store", full, "--trace-settle", "1"])
    for rank in (0, 1, 2):
        n0.start_rank(JOB, rank, rate=RATE)
    for rank in (3, 4):
        n1.start_rank(JOB, rank, rate=RATE)
    c.wait_ranks(JOB, 5, min_step=5)
    before = step_rate(c, (0, 1, 2), 4)

    w = c.add_window(JOB, {"in_steps": 50, "steps": 100})
    wid, a, b = w["id"], w["start_step"], w["stop_step"]
    key = "/%s/%s/%s/window-%d/rank-%%d.tar.zst" % (BUCKET, PREFIX, JOB, wid)
    s3.faults = {key % 0: "hang", key % 1: "deny"}
    # Rank 3's trace will not fit the 4 MiB store: 8 MiB that zstd cannot
    # shrink, written while its window runs.
    d3 = os.path.join(n1.out, "rank3_start%d_stop%d" % (a, b))
    wait_for(lambda: os.path.isdir(d3) or None, 60, "rank 3's window begun",
             interval=0.02)
    with open(os.path.join(d3, "big.bin"), "wb") as f:
        f.write(os.urandom(8 << 20))
    c.wait_window_done(JOB, wid, [0, 1, 2, 3, 4], timeout=90)
    t_done = time.monotonic()

    # While rank 0's PUT hangs: the ranks step as before, and the agent's
    # loop serves a second window to its end.
    wait_for(lambda: s3.refused.count("told to hang") >= 1 or None, 60,
             "rank 0's PUT hanging", interval=0.05)
    during = step_rate(c, (0, 1, 2), 4)
    log("steps/s before %s, while an upload hangs %s" % (
        {r: round(v, 1) for r, v in before.items()},
        {r: round(v, 1) for r, v in during.items()}))
    for r in (0, 1, 2):
        check(during[r] >= 0.8 * before[r], "rank %d stepped %.1f/s while "
              "an upload hung, %.1f/s before" % (r, during[r], before[r]))
    w2 = c.add_window(JOB, {"in_steps": 20, "steps": 10})
    c.wait_window_done(JOB, w2["id"], [0, 1, 2, 3, 4], timeout=60)
    hangs_by_then = s3.refused.count("told to hang")
    check(not [e for r in c.status(JOB)["ranks"] if r["rank"] == 0
               for e in events_of(r, "collect_failed", wid)],
          "rank 0's upload given up before window 2 ended: the test shows "
          "nothing about the loop then")
    log("window %d served while rank 0's PUT hung (%d hung tries so far)" %
        (w2["id"], hangs_by_then))

    def all_reported():
        code, idx = c.http("GET", "/v1/jobs/%s/windows/%d/traces" %
                           (JOB, wid))
        check(code == 200, "traces index: %s %s" % (code, idx))
        cnt = idx["counts"]
        return idx if cnt["collected"] + cnt["collect_failed"] == 5 else None
    # Six tries of at most STALL_S (and curl's few seconds to see a stall)
    # with 0.25+0.5+1+2+4 s between them.
    idx = wait_for(all_reported, 150, "every rank of window %d reported" %
                   wid, interval=0.5)
    took = time.monotonic() - t_done
    by = {t["rank"]: t for t in idx["traces"]}
    log("window %d reported %.1f s after its end: %s" % (
        wid, took, {r: (t["state"], t.get("error")) for r, t in by.items()}))
    loc = "s3://%s/%s/%s/window-%d/rank-%%d.tar.zst" % (BUCKET, PREFIX, JOB,
                                                        wid)
    check(by[0]["state"] == "collect_failed" and re.fullmatch(
        r"upload to %s: (Timeout was reached|Operation too slow)\S* \(6 "
        r"tries\)" % re.escape(loc % 0), by[0].get("error", "")) is not None,
        "rank 0 (a hung store): %s" % by[0])
    check(by[1]["state"] == "collect_failed" and by[1].get("error") ==
          "upload to %s: HTTP 403: AccessDenied: Access Denied (6 tries)" %
          (loc % 1), "rank 1 (a refusing store): %s" % by[1])
    check(by[2]["state"] == "collected" and by[2]["location"] == loc % 2,
          "rank 2: %s" % by[2])
    check(by[3]["state"] == "collect_failed" and
          "No space left on device" in by[3].get("error", ""),
          "rank 3 (a full store): %s" % by[3])
    check(by[4]["state"] == "collected", "rank 4: %s" % by[4])
    # Bounded: six PUTs each, none queued any more; nothing half written
    # left in the full store.
    puts = {r: [p for m, p in s3.started if m == "PUT" and p == key % r]
            for r in (0, 1)}
    check(len(puts[0]) == 6 and len(puts[1]) == 6, "PUTs: rank 0 %d, rank 1 "
          "%d, six each expected" % (len(puts[0]), len(puts[1])))
    def queued(path):
        """The queue file's lines of window wid (pending, to upload or to
        report)."""
        out = []
        for ln in open(path).read().splitlines()[1:]:
            f = ln.split()
            job, w = (f[1], f[2]) if f[0] in "+!^" else (f[0], f[1])
            if job == JOB and w == str(wid):
                out.append(ln)
        return out
    for n in (n0, n1):
        queue = os.path.join(n.shm, "dynprof-agent.collect")
        wait_for(lambda: queued(queue) == [] or None, 30,
                 "%s's queue file without window %d" % (n.name, wid))
    left = [f for _, _, fs in os.walk(full) for f in fs if f.endswith(".part")]
    check(left == [], "half-written archives left in the full store: %s" %
          left)
    st = os.statvfs(full)
    check(st.f_bfree * st.f_frsize > 3 << 20, "the full store was not "
          "emptied of the failed archive")
    # Each rank's outcome once, in the events and /ranks.
    for r in c.status(JOB)["ranks"]:
        kind = "collect_failed" if r["rank"] in (0, 1, 3) else "collected"
        check(len(events_of(r, kind, wid)) == 1 and
              len(events_of(r, "collected" if kind == "collect_failed" else
                            "collect_failed", wid)) == 0,
              "rank %d events %s" % (r["rank"], r["events"]))
    time.sleep(3)
    check(len([p for m, p in s3.started if m == "PUT" and p == key % 0]) == 6,
          "rank 0 tried again after it was reported failed")
    out = c.ctl("status", JOB)
    check(out.returncode == 0, "status: %s" % out.stdout)
    log("dynprofctl status:\n%s" % out.stdout)


if __name__ == "__main__":
    main(test)
