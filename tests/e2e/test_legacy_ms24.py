#!/usr/bin/python3
"""MindSpore 2.4's own monitor driven end to end through --legacy-dir: the
reference dynamic_profiler.py, unmodified (../shared/reference beside the
source tree, else $DYNPROF_MS24_REFERENCE; skipped without it), in a job that
steps ten times a second (legacy_ms24_job.py).  A window asked of the real
coordinator reaches it through the file the agent writes: its Profiler starts
in step_begin(start) and stops in step_end(stop), and the job's status shows
the rank observed, then observed complete, once the trace is written.  Then
the same job is driven by hand, its file edited as on a shared filesystem.

Last, a second job with MindSpore's own hourly shared-memory name, and an
agent with --legacy-shm: each window is also written into the job's record,
so that it is visible at the next step.

Figures (printed): request -> the window visible in the job's shared memory,
through dynprof's file, by hand, and through dynprof's direct record.  Runs
alone: the hourly name is the node's."""

import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from cluster import (PYTHON, SKIP, Cluster, Proc, check, events_of, log,  # noqa: E402
                     main, wait_for)

JOB = "ms24-%d" % os.getpid()
RATE = 10
ROUNDS = 6


def reference():
    p = os.environ.get("DYNPROF_MS24_REFERENCE") or os.path.join(
        HERE, "..", "..", "..", "shared", "reference",
        "mindspore_2.4_dynamic_profiler.py")
    return os.path.abspath(p) if os.path.exists(p) else None


def records(path):
    try:
        with open(path) as f:
            return [json.loads(x) for x in f if x.endswith("\n")]
    except OSError:
        return []


def current_step(path):
    try:
        with open(path + ".step") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def seen_at(path, start, stop):
    for r in records(path):
        if r["what"] == "seen" and (r["start_step"], r["stop_step"]) == (
                start, stop):
            return r
    return None


def split(seen, t0):
    """(request -> file written by the agent, file written -> seen by the
    job): what dynprof adds and what MindSpore's poll adds."""
    check(seen.get("cfg_mtime") is not None, "seen without the file's mtime")
    return (seen["cfg_mtime"] - t0, seen["time"] - seen["cfg_mtime"])


def test():
    ref = reference()
    if ref is None:
        print("SKIP: no MindSpore 2.4 reference file")
        return SKIP
    with Cluster("legacy-ms24") as c:
        c.start_coordinator()
        node = c.node("n1")
        ldir = os.path.join(node.dir, "legacy")
        jdir = os.path.join(ldir, JOB)
        out = os.path.join(node.dir, "prof")
        os.makedirs(jdir)
        with open(os.path.join(jdir, "dynprof.output"), "w") as f:
            f.write(out + "\n")
        node.start_agent(["--legacy-dir", ldir])

        jlog = os.path.join(node.dir, "job.jsonl")
        job = Proc("ms24-job", [PYTHON, os.path.join(HERE, "legacy_ms24_job.py"),
                                ref, jdir, out, jlog, str(RATE), "100000"],
                   os.path.join(node.dir, "job.log"),
                   env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        c.procs.append(job.start())

        # Rank 0 writes MindSpore 2.4's defaults: the agent knows the dialect.
        def dialect():
            code, st = c.http("GET", "/v1/jobs/%s" % JOB)
            e = st.get("legacy") if code == 200 else None
            return e if e and e["dialects"] == {"mindspore-2.4": 1} else None
        wait_for(dialect, 20, "job %s served as mindspore-2.4" % JOB)
        wait_for(lambda: current_step(jlog) >= 3, 20, "the job stepping")

        # 1. Through dynprof: a window 5 s ahead.
        start = current_step(jlog) + 5 * RATE
        stop = start + 4
        t0 = time.time()
        w = c.add_window(JOB, {"start_step": start, "stop_step": stop,
                               "options": {"profiler_level": 1}})
        seen = wait_for(lambda: seen_at(jlog, start, stop), 10,
                        "the window in the job's shared memory")
        via_dynprof = seen["time"] - t0
        parts = [split(seen, t0)]
        check(seen["step"] < start, "seen at step %d, after its start %d" % (
            seen["step"], start))

        def observed_complete():
            st = c.status(JOB)
            for r in st.get("ranks", []):
                if r["rank"] == 0 and r["state"] == "observed_complete":
                    return st
            return None
        st = wait_for(observed_complete, 15 + (stop - start) / RATE,
                      "rank 0 observed complete")
        r0 = [r for r in st["ranks"] if r["rank"] == 0][0]
        check(events_of(r0, "observed", w["id"]) and
              events_of(r0, "observed_complete", w["id"]) and
              not events_of(r0, "started", w["id"]) and
              not events_of(r0, "stopped", w["id"]),
              "rank 0 events: %s" % r0["events"])
        check(r0["output_dir"] == os.path.join(
            out, "rank0_start%d_stop%d" % (start, stop)),
            "output_dir %s" % r0["output_dir"])

        calls = [(r["what"], r["hook"], r["step"]) for r in records(jlog)
                 if r["what"] in ("Profiler", "start", "stop", "finalize")]
        check(calls[:4] == [("Profiler", "step_begin", start),
                            ("start", "step_begin", start),
                            ("stop", "step_end", stop),
                            ("finalize", "step_end", stop)],
              "Profiler calls %s, want start in step_begin(%d), stop in "
              "step_end(%d)" % (calls, start, stop))
        prof = [r for r in records(jlog) if r["what"] == "Profiler"][0]
        check(prof["options"].get("profiler_level") is not None and
              str(prof["options"]["profiler_level"]).endswith("Level1"),
              "Profiler options %s" % prof["options"])
        log("MindSpore 2.4 profiled steps %d-%d; rank 0 observed complete" % (
            start, stop))

        # 2. More through dynprof: the next window is asked for while one is
        # in the file, and made due by cancelling that one (never started).
        wait_for(lambda: current_step(jlog) > stop + 2, 10, "past the window")
        # Each request at a random point of the poll's period, both ways.
        rnd = random.Random(os.getpid())
        lat = [via_dynprof]
        prev = None
        for k in range(ROUNDS):
            time.sleep(rnd.uniform(0, 2.0))
            a = current_step(jlog) + 8 * RATE
            nw = c.add_window(JOB, {"start_step": a, "stop_step": a + 1})
            t0 = time.time()
            if prev is not None:
                code, _ = c.http("DELETE", "/v1/jobs/%s/windows/%d" % (
                    JOB, prev["id"]))
                check(code == 200, "cancel: %s" % code)
            seen = wait_for(lambda: seen_at(jlog, a, a + 1), 10,
                            "window %d in shared memory" % nw["id"])
            lat.append(seen["time"] - t0)
            parts.append(split(seen, t0))
            prev = nw
        c.http("DELETE", "/v1/jobs/%s/windows/%d" % (JOB, prev["id"]))
        time.sleep(1.5)

        # 3. By hand, as before dynprof: the file edited in place.
        cfg = os.path.join(jdir, "profiler_config.json")
        hand = []
        for k in range(ROUNDS):
            time.sleep(rnd.uniform(0, 2.0))
            a = current_step(jlog) + 8 * RATE
            with open(cfg) as f:
                data = json.load(f)
            data.update(start_step=a, stop_step=a + 1)
            t1 = time.time()
            with open(cfg, "w") as f:
                json.dump(data, f)
            seen = wait_for(lambda: seen_at(jlog, a, a + 1), 10,
                            "the hand-edited window in shared memory")
            hand.append(seen["time"] - t1)
        # Each part against what bounds it.  dynprof writes a file at least
        # 1 s after its last write and in a later whole second than its last
        # mtime (docs/legacy.md), the moment those allow it: a request is in
        # the file within 1 s of the write before, which the request itself
        # may have caused (a cancelled window or a finished one taken out,
        # itself held back up to 1 s): 2 s at most.  MindSpore reads a
        # written file at its next poll (2 s) and step (0.1 s), whoever
        # wrote it.
        ours = [p[0] for p in parts]
        theirs = [p[1] for p in parts] + hand
        check(max(ours) < 2.0 + 0.3 and max(theirs) < 2.0 + 0.3,
              "request -> file written %s; file written -> seen %s "
              "(hand-edited: request -> seen %s)" % (ours, theirs, hand))
        log("FIGURE request -> visible to MindSpore 2.4 (2 s poll): through "
            "dynprof %d requests mean %.2f s max %.2f s; file edited by hand "
            "%d edits mean %.2f s max %.2f s; request -> file written by "
            "dynprof max %.2f s" % (
                len(lat), sum(lat) / len(lat), max(lat), len(hand),
                sum(hand) / len(hand), max(hand), max(ours)))
        job.stop()

        # 4. The direct record: a second job, MindSpore's hourly name.
        direct = direct_record(c, ref, rnd)
        log("FIGURE request -> visible to MindSpore 2.4 through dynprof's "
            "direct record (--legacy-shm): %d requests mean %.3f s median "
            "%.3f s max %.3f s" % (len(direct), sum(direct) / len(direct),
                                   sorted(direct)[len(direct) // 2],
                                   max(direct)))


def written_direct(c, job, wid):
    """The window's status once it is written, also into the record."""
    for w in c.status(job)["legacy"]["windows"]:
        if w["id"] == wid and w["nodes"]["written"] == 1 and \
                "also written to DynamicProfileShm" in (w["reason"] or ""):
            return w
    return None


def direct_record(c, ref, rnd):
    """Job B on node n2, whose agent has --legacy-shm: each window is in
    its shared memory at its next step.  Returns the latencies."""
    node = c.node("n2")
    ldir = os.path.join(node.dir, "legacy")
    jdir = os.path.join(ldir, JOB + "b")
    os.makedirs(jdir)
    node.start_agent(["--legacy-dir", ldir, "--legacy-shm"])
    jlog = os.path.join(node.dir, "job.jsonl")
    job = Proc("ms24-job-b", [PYTHON, os.path.join(HERE, "legacy_ms24_job.py"),
                              ref, jdir, os.path.join(node.dir, "prof"), jlog,
                              str(RATE), "100000", "hourly"],
               os.path.join(node.dir, "job.log"),
               env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    c.procs.append(job.start())
    wait_for(lambda: current_step(jlog) >= 3, 20, "job B stepping")
    lat, prev = [], None
    for k in range(ROUNDS):
        time.sleep(rnd.uniform(0, 2.0))
        # Past the previous window even if the job stalled meanwhile (it
        # is deleted only after this one is added).
        a = current_step(jlog) + 8 * RATE
        if prev is not None:
            a = max(a, prev["stop_step"] + 1)
        nw = c.add_window(JOB + "b", {"start_step": a, "stop_step": a + 1})
        t0 = time.time()
        if prev is not None:
            c.http("DELETE", "/v1/jobs/%sb/windows/%d" % (JOB, prev["id"]))
        seen = wait_for(lambda: seen_at(jlog, a, a + 1), 10,
                        "window %d in job B's shared memory" % nw["id"])
        lat.append(seen["time"] - t0)
        prev = nw
        wait_for(lambda: written_direct(c, JOB + "b", nw["id"]), 10,
                 "window %d written, also to the record" % nw["id"])
    # At the next step (0.1 s), not at the next poll (2 s): a request whose
    # record the poller overwrote with the file before (it copies the file
    # the agent wrote last) reaches the ranks once the file is written, at
    # most a second later.
    check(sorted(lat)[len(lat) // 2] < 0.3 and max(lat) < 1.5,
          "direct record latencies %s" % lat)
    job.stop()
    return lat


if __name__ == "__main__":
    main(test)
