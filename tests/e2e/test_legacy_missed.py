#!/usr/bin/python3
"""Legacy windows that end without the framework profiling them
(docs/legacy.md): the real coordinator and agents with --legacy-dir, and
MindSpore ranks run as their monitor behaves (legacy_ms_rank.py).

- Back-to-back windows: the file holds one at a time, so the second is
  written once the first is over; its start (or stop) step has passed by the
  time a MindSpore rank polls it, and it drops it in its own words, in the
  output dynprof.logs names: the window ends missed with those words, and
  the next one is written and profiled (the callback path on 2.6, msrun's
  worker logs; 2.7's step(), GLOG_log_dir's rank_N/logs).
- A window nothing is seen of (no trace, no log line), or whose ranks began
  a trace and never finished it, ends unverified after --legacy-window-max;
  the next is written, and the coordinator takes the window out of the
  job's schedule.

Requested and profiled steps of every window are printed."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
from cluster import (Cluster, check, events_of, log, main,  # noqa: E402
                     wait_for)
from test_legacy_dialects import (DEFAULTS, legacy_of,  # noqa: E402
                                  torch_job, wait_file, window_state)

PID = os.getpid()
RANK_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "legacy_ms_rank.py")
RATE = 10.0


def ranks_of(c, job):
    return {r["rank"]: r for r in c.status(job).get("ranks", [])}


def complete_for(c, job, wid, ranks):
    """The job's ranks if every rank of ranks is observed complete in wid."""
    r = ranks_of(c, job)
    return r if all(k in r and r[k]["window"] == wid and r[k]["state"] ==
                    "observed_complete" for k in ranks) else None


def wait_state(c, job, wid, state, timeout):
    return wait_for(lambda: (lambda w: w if w and w["state"] == state
                             else None)(window_state(c, job, wid)), timeout,
                    "%s: window %d %s" % (job, wid, state))


def make_job(c, ldir, node, dialect, name):
    """A MindSpore job directory of dialect, its file as the framework
    writes it, dynprof.output and dynprof.logs; served."""
    job = "lgm%d-%s" % (PID, name)
    jdir = os.path.join(ldir, job)
    out = os.path.join(node.dir, "out-" + job)
    logs = os.path.join(node.dir, "logs-" + job)
    for d in (jdir, out, logs):
        os.mkdir(d)
    with open(os.path.join(jdir, "profiler_config.json"), "w") as f:
        json.dump(DEFAULTS[dialect], f)
    with open(os.path.join(jdir, "dynprof.output"), "w") as f:
        f.write(out + "\n")
    with open(os.path.join(jdir, "dynprof.logs"), "w") as f:
        f.write(logs + "\n")
    wait_for(lambda: (lambda e: e and e["dialect"] == dialect)(
        legacy_of(c, job)), 10, "%s served as %s" % (job, dialect))
    return job, jdir, out, logs


class MsJob:
    """Two ranks of a MindSpore job on one path, stepping at RATE."""

    def __init__(self, c, ldir, node, dialect, path, layout):
        self.c = c
        self.dialect, self.path = dialect, path
        self.job, self.jdir, self.out, self.logs = make_job(
            c, ldir, node, dialect, "%s-%s" % (dialect[-3:].replace(".", ""),
                                               path))
        self.stop = os.path.join(node.dir, "stop-" + self.job)
        self.truth = os.path.join(node.dir, "steps-" + self.job)
        open(self.truth, "w").close()
        self.t0 = time.time()
        self.procs = [subprocess.Popen([
            sys.executable, RANK_PY, self.jdir, self.out, self.logs, layout,
            str(rank), dialect[-3:], path, str(RATE), str(self.t0),
            self.stop, self.truth]) for rank in (0, 1)]

    def step_now(self):
        return int((time.time() - self.t0) * RATE)

    def profiled(self):
        """{(start, stop): [(first, last) per rank]} as the ranks ran them."""
        got = {}
        with open(self.truth) as f:
            for line in f:
                a, b, first, last = map(int, line.split())
                got.setdefault((a, b), []).append((first, last))
        return got

    def close(self):
        open(self.stop, "w").close()
        for p in self.procs:
            p.wait(timeout=10)


def back_to_back(jobs):
    """Per job, three windows posted at once: A ahead, B two steps after A's
    stop, C well after.  The file holds one window at a time, so B is
    written once A is over, and only then polled: its steps have passed,
    MindSpore drops it in its own words and it ends missed; C is written
    next and profiled."""
    c = jobs[0].c
    wa, wb, wc = {}, {}, {}
    for j in jobs:
        s = j.step_now() + 80
        wa[j] = (c.add_window(j.job, {"start_step": s,
                                      "stop_step": s + 1})["id"], s)
        wb[j] = (c.add_window(j.job, {"start_step": s + 3,
                                      "stop_step": s + 4})["id"], s + 3)
        wc[j] = (c.add_window(j.job, {"start_step": s + 300,
                                      "stop_step": s + 301})["id"], s + 300)
    for j in jobs:
        wait_for(lambda: complete_for(c, j.job, wa[j][0], (0, 1)), 60,
                 "%s: window A observed complete on ranks 0 and 1" % j.job)
    for j in jobs:
        w = wait_state(c, j.job, wb[j][0], "missed", 40)
        s = wb[j][1]
        words = ("its start step %d had passed (\"start_step must be "
                 "greater than step_num\"" % s if j.path == "callback" else
                 "its stop step %d had passed (\"stop_step must be greater "
                 "than step_num\"" % (s + 1))
        check(words in (w["reason"] or "") and
              "missed: %s dropped it" % j.dialect in w["reason"] and
              "2 ranks said so" in w["reason"],
              "%s: window B: %s" % (j.job, w))
        log("%s: window B missed: %s" % (j.job, w["reason"]))
    for j in jobs:
        wait_file(os.path.join(j.jdir, "profiler_config.json"),
                  lambda x: x.get("start_step") == wc[j][1],
                  "%s: window C written" % j.job)
        wait_for(lambda: complete_for(c, j.job, wc[j][0], (0, 1)), 60,
                 "%s: window C observed complete on ranks 0 and 1" % j.job)
        got = j.profiled()
        for wid, s in (wa[j], wb[j], wc[j]):
            log("%s (%s, %s): window %d requested %d-%d, profiled %s" % (
                j.job, j.dialect, j.path, wid, s, s + 1, got.get((s, s + 1))))
        for wid, s in (wa[j], wc[j]):
            check(len(got.get((s, s + 1), [])) == 2,
                  "%s: window %d profiled by %s" % (j.job, wid, got))
        check((wb[j][1], wb[j][1] + 1) not in got,
              "%s: window B profiled: %s" % (j.job, got))
    log("MindSpore: back-to-back windows each written in turn; the one whose "
        "steps passed meanwhile ends missed in the framework's words, the "
        "next is written and profiled")


TORCH_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "legacy_torch_rank.py")


def torch_ahead(c, ldir, node):
    """torch_npu reads a file written while a window runs only once that
    window stopped: the next window is written as soon as every rank said
    it started the one in the file, so three windows posted at once, each
    starting right after the one before (one step between), are each
    profiled, and each trace is credited to its own window by its
    marker."""
    job = "lgm%d-torch" % PID
    jdir, _, stop = torch_job(c, ldir, node, job)
    time.sleep(1.1)     # the ranks start a second after the framework's file
    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, TORCH_PY, jdir, str(rank),
                               str(RATE), str(t0), stop]) for rank in (0, 1)]
    try:
        wait_for(lambda: len(os.listdir(os.path.join(jdir, "log"))) == 2
                 if os.path.isdir(os.path.join(jdir, "log")) else False, 10,
                 "torch_npu ranks' logs")
        s = int((time.time() - t0) * RATE) + 60
        # Each starts one step after the one before stopped: torch_npu
        # looks at its file again at the step after its stop.  It must
        # read the next while the one before runs: they last 4 s.
        ws = [(s, s + 39), (s + 41, s + 80), (s + 82, s + 83)]
        ids = [c.add_window(job, {"start_step": a, "stop_step": b})["id"]
               for a, b in ws]
        def done(wid):
            r = ranks_of(c, job)
            return all(k in r and events_of(r[k], "observed_complete", wid)
                       for k in (0, 1))
        for wid, (a, b) in zip(ids, ws):
            wait_for(lambda: done(wid), 60,
                     "torch_npu: window %d (%d-%d) observed complete on "
                     "ranks 0 and 1" % (wid, a, b))
            log("torch_npu: window %d requested %d-%d, observed complete" % (
                wid, a, b))
        for wid in ids:
            w = window_state(c, job, wid)
            check(w is None or (w["state"] in ("over", "written") and
                                "left the schedule" not in (w["reason"] or "")),
                  "window %d: %s" % (wid, w))
        # What the ranks say they did: each window started at its start.
        text = "".join(open(os.path.join(jdir, "log", f)).read()
                       for f in os.listdir(os.path.join(jdir, "log")))
        for a, _ in ws:
            check(text.count("Start Dynamic Profiler at %d step." % a) == 2,
                  "window at %d not started by both ranks:\n%s" % (a, text))
        check("not effective" not in text, "a window dropped:\n%s" % text)
    finally:
        open(stop, "w").close()
        for p in procs:
            p.wait(timeout=10)
    log("torch_npu: back-to-back windows each profiled, the next written "
        "while the one before ran")


def bound(c, ldir, node, max_s):
    """--legacy-window-max: a window nothing is seen of, then one whose
    rank began a trace and never finished it, end unverified; the next is
    written each time, and the coordinator takes them out of the schedule."""
    job, jdir, out, _ = make_job(c, ldir, node, "mindspore-2.5", "bound")
    path = os.path.join(jdir, "profiler_config.json")
    wd = c.add_window(job, {"start_step": 500, "stop_step": 501})["id"]
    we = c.add_window(job, {"start_step": 600, "stop_step": 601})["id"]
    wait_file(path, lambda x: x.get("start_step") == 500, "window D written")
    t = time.time()
    w = wait_state(c, job, wd, "unverified", max_s + 20)
    check(time.time() - t >= max_s - 1.5 and "no rank seen to run it "
          "within %d s" % max_s in (w["reason"] or ""), "window D: %s after "
          "%.1f s" % (w, time.time() - t))
    wait_file(path, lambda x: x.get("start_step") == 600, "window E written")
    # Rank 0 begins window E's trace and never finishes it.
    os.mkdir(os.path.join(out, "rank0_start600_stop601"))
    wait_for(lambda: (lambda r: r.get(0) and r[0]["state"] == "observed")(
        ranks_of(c, job)), 10, "rank 0 observed in window E")
    wf = c.add_window(job, {"start_step": 700, "stop_step": 701})["id"]
    w = wait_state(c, job, we, "unverified", max_s + 20)
    check("1 of 1 ranks seen to begin it not seen to finish it within %d s"
          % max_s in (w["reason"] or ""), "window E: %s" % w)
    wait_file(path, lambda x: x.get("start_step") == 700, "window F written")

    def windows():
        code, st = c.http("GET", "/v1/jobs/%s" % job)
        return {w["id"]: w for w in st.get("windows", [])} if code == 200 \
            else {}
    ws = wait_for(lambda: (lambda ws: ws if all(
        ws.get(i, {}).get("state") == "done" for i in (wd, we)) else None)(
        windows()), 15, "windows D and E out of the schedule")
    check(ws[wf]["state"] == "scheduled", "window F: %s" % ws[wf])
    # Their ends are still said once out of the schedule.
    check(window_state(c, job, wd)["state"] == "unverified" and
          window_state(c, job, we)["state"] == "unverified",
          "legacy report: %s" % legacy_of(c, job))
    log("a window not seen to end within %d s ends unverified, the next "
        "goes, the coordinator drops it" % max_s)


def test():
    with Cluster("legacy-missed") as c:
        c.start_coordinator()
        node = c.node("n1")
        ldir = node.legacy_dir()
        node.start_agent(["--legacy-dir", ldir])
        jobs = []
        try:
            jobs.append(MsJob(c, ldir, node, "mindspore-2.6", "callback",
                              "msrun"))
            jobs.append(MsJob(c, ldir, node, "mindspore-2.7", "step",
                              "glog"))
            back_to_back(jobs)
        finally:
            for j in jobs:
                j.close()
        torch_ahead(c, ldir, node)
        n2 = c.node("n2")
        ldir2 = n2.legacy_dir()
        n2.start_agent(["--legacy-dir", ldir2, "--legacy-window-max", "6"])
        bound(c, ldir2, n2, 6)
        for n in (node, n2):
            check(n.agent.alive(), "agent %s died" % n.name)


if __name__ == "__main__":
    main(test)
