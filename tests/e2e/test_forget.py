#!/usr/bin/python3
"""DELETE /v1/jobs/J and dynprofctl forget, through a real coordinator, agent
and rank: a job made by a typo is forgotten in memory and in SQLite; a job
with a window running is refused (409) unless --force; its agent gets an
empty schedule of a newer generation (the segment drops the windows) and
stays subscribed, so a later window still reaches the rank; and a restarted
coordinator does not bring a forgotten job back."""

import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "forget-%d" % os.getpid()
TYPO = "mpl-%d" % os.getpid()


def stored(c, job):
    """Rows of job in each table of the coordinator's SQLite file."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(c.state, "dynprof.db"),
                         uri=True, timeout=10)
    try:
        return {t: db.execute("SELECT COUNT(*) FROM %s WHERE job = ?" % t,
                              (job,)).fetchone()[0]
                for t in ("jobs", "windows", "ranks", "events")}
    finally:
        db.close()


def listed(c):
    code, body = c.http("GET", "/v1/jobs")
    check(code == 200, "GET /v1/jobs: %s %s" % (code, body))
    return {j["job"]: j for j in body["jobs"]}


def segment(c, node, job):
    r = c.ctl("--json", "local", job, "--shm-dir", node.shm)
    check(r.returncode == 0, "dynprofctl local %s: %s" % (job, r.stdout))
    return json.loads(r.stdout)


def test():
    with Cluster("forget") as c:
        n0 = c.start_node_ranks(JOB, [0])

        # A typo of a job: scheduled, then forgotten, from memory and store.
        c.add_window(TYPO, {"start_step": 500, "stop_step": 504})
        check(stored(c, TYPO)["jobs"] == 1, "the typo's job is not stored")
        r = c.ctl("forget", TYPO)
        check(r.returncode == 0 and "job %s forgotten" % TYPO in r.stdout,
              "forget %s: %d %s" % (TYPO, r.returncode, r.stdout))
        check(TYPO not in listed(c), "%s still in /v1/jobs" % TYPO)
        code, _ = c.http("GET", "/v1/jobs/%s" % TYPO)
        check(code == 404, "GET /v1/jobs/%s after forget: %s" % (TYPO, code))
        check(stored(c, TYPO) == {"jobs": 0, "windows": 0, "ranks": 0,
                                   "events": 0},
              "%s left in the store: %s" % (TYPO, stored(c, TYPO)))
        r = c.ctl("forget", TYPO)
        check(r.returncode == 1 and "no job" in r.stdout,
              "forget of a job not there: %d %s" % (r.returncode, r.stdout))

        # A job with a window running: refused, then forced.
        st = c.wait_ranks(JOB, 1, min_step=5)
        top = st["progress"]["max_step"]
        w = c.add_window(JOB, {"start_step": top + 25, "stop_step": top + 124})
        wait_for(lambda: events_of([r for r in c.status(JOB)["ranks"]
                                    if r["rank"] == 0][0], "started", w["id"]),
                 30, "rank 0 started window %d" % w["id"], interval=0.1)
        r = c.ctl("forget", JOB)
        check(r.returncode == 1 and "refused" in r.stdout and "running" in r.stdout,
              "forget of a running job: %d %s" % (r.returncode, r.stdout))
        code, body = c.http("DELETE", "/v1/jobs/%s" % JOB)
        check(code == 409 and body.get("field") == "job",
              "DELETE of a running job: %s %s" % (code, body))
        check(JOB in listed(c), "refused, yet %s left /v1/jobs" % JOB)
        check(stored(c, JOB)["windows"] == 1, "refused, yet the store changed")
        r = c.ctl("--json", "forget", JOB, "--force")
        check(r.returncode == 0, "forget --force: %d %s" % (r.returncode,
                                                            r.stdout))
        gen = json.loads(r.stdout)["generation"]
        check(gen > w["generation"], "forgotten at generation %d, window at "
              "%d" % (gen, w["generation"]))
        log("job %s forgotten at generation %d" % (JOB, gen))
        # The agent took the empty schedule over the window's.
        seg = wait_for(lambda: (lambda s: s if s["generation"] == gen else None)(
            segment(c, n0, JOB)), 10, "n0's segment at generation %d" % gen)
        check(seg["windows"] == [], "segment still has windows: %s" %
              seg["windows"])
        check(stored(c, JOB)["windows"] == 0 and stored(c, JOB)["jobs"] == 0,
              "windows or job row of %s left: %s" % (JOB, stored(c, JOB)))
        code, body = c.http("GET", "/v1/jobs/%s" % JOB)
        check(code == 404 or (body.get("generation") == 0 and
                              not body.get("windows")),
              "after forget: %s %s" % (code, body))

        # Still subscribed: a window of the job's next run reaches the rank.
        st = c.wait_ranks(JOB, 1, min_step=top + 130)
        top = st["progress"]["max_step"]
        w2 = c.add_window(JOB, {"start_step": top + 25, "stop_step": top + 29})
        # Its rank ran window 1 already: never an id twice.
        check(w2["id"] == w["id"] + 1, "window ids after forget: %s" % w2)
        st = c.wait_window_done(JOB, w2["id"], [0], timeout=60)
        r0 = [r for r in st["ranks"] if r["rank"] == 0][0]
        check(events_of(r0, "stopped", w2["id"])[0]["step"] == w2["stop_step"],
              "window %d stopped: %s" % (w2["id"], r0["events"]))
        check(n0.trace(0, w2["start_step"], w2["stop_step"]) is not None,
              "no trace of window %d" % w2["id"])

        # Nobody serves it any more: forgotten whole, and a restart keeps it so.
        n0.ranks[0].stop()
        n0.agent.stop()
        r = c.ctl("forget", JOB)
        check(r.returncode == 0, "forget: %d %s" % (r.returncode, r.stdout))
        check(JOB not in listed(c), "%s still listed" % JOB)
        check(stored(c, JOB) == {"jobs": 0, "windows": 0, "ranks": 0,
                                  "events": 0},
              "%s left in the store: %s" % (JOB, stored(c, JOB)))
        c.coord.stop()
        c.start_coordinator(heartbeat_ms=500)
        jobs = listed(c)
        check(JOB not in jobs and TYPO not in jobs,
              "a restarted coordinator brought back %s" % sorted(jobs))
        log("forgotten jobs stay forgotten across a restart")


if __name__ == "__main__":
    main(test)
