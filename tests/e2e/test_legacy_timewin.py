#!/usr/bin/python3
"""A time window for legacy jobs (docs/legacy.md): the real coordinator and an
agent with --legacy-dir serving a torch_npu and a MindSpore 2.5 job.  Their
config files count steps only, so the agent refuses the window saying why:
the reason reaches the operator in the job's status (its legacy report and
the window's state "refused"), in dynprofctl status, and the event stream
says the window ended.  Nothing is written to the jobs' files, and a step
window after it is written as usual."""

import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402
from test_legacy_dialects import (DEFAULTS, legacy_of, torch_job,  # noqa: E402
                                  window_state)

PID = os.getpid()


def ms25_job(c, ldir, node, job):
    """A MindSpore 2.5 job directory, its file as the framework writes it."""
    jdir = os.path.join(ldir, job)
    out = os.path.join(node.dir, "out-" + job)
    os.mkdir(out)
    os.mkdir(jdir)
    with open(os.path.join(jdir, "dynprof.output"), "w") as f:
        f.write(out + "\n")
    with open(os.path.join(jdir, "profiler_config.json"), "w") as f:
        json.dump(DEFAULTS["mindspore-2.5"], f)
    wait_for(lambda: (lambda e: e and e["dialect"] == "mindspore-2.5")(
        legacy_of(c, job)), 10, "%s served" % job)
    return jdir


def events(c, job):
    """The job's event stream as it stands (no follow)."""
    with urllib.request.urlopen(c.url() + "/v1/jobs/%s/events" % job,
                                timeout=10) as r:
        return [json.loads(x) for x in r.read().decode().splitlines() if x]


def test():
    with Cluster("legacytw") as c:
        c.start_coordinator(heartbeat_ms=200)
        node = c.node("n1")
        ldir = node.legacy_dir()
        node.start_agent(["--legacy-dir", ldir])
        jobs = {"torch_npu": "lgtw%d-torch" % PID,
                "mindspore-2.5": "lgtw%d-ms25" % PID}
        dirs = {"torch_npu": torch_job(c, ldir, node, jobs["torch_npu"])[0],
                "mindspore-2.5": ms25_job(c, ldir, node,
                                          jobs["mindspore-2.5"])}
        files = {}
        for d, jdir in dirs.items():
            path = os.path.join(jdir, "profiler_config.json")
            with open(path, "rb") as f:
                files[d] = (path, f.read(), os.stat(path).st_mtime_ns)

        for d, job in jobs.items():
            w = c.add_window(job, {"at": "+5s", "duration_ms": 2000})
            wid = w["id"]
            want = "a time window: %s's config counts steps only" % d
            st = wait_for(lambda: (lambda s: s if [
                x for x in s["windows"] if x["id"] == wid and
                x["state"] == "refused"] else None)(c.status(job)), 15,
                "%s: window %d refused in the status" % (d, wid))
            got = [x for x in st["windows"] if x["id"] == wid][0]
            log("%s: window %d refused: %s" % (d, wid,
                                              got.get("refused_reason")))
            check(got.get("refused_reason") == want, "%s: the nodes' reason "
                  "%r, want %r" % (d, got.get("refused_reason"), want))
            out = c.ctl("status", job).stdout
            check(("window %d refused by the nodes: %s" % (wid, want)) in out,
                  "%s: dynprofctl status: %s" % (d, out))
            ev = [e for e in events(c, job) if e.get("type") == "window" and
                  e.get("window") == wid]
            check([e["change"] for e in ev] == ["scheduled", "done"] and
                  ev[0].get("at") == w["at"] and
                  ev[0].get("duration_ms") == 2000,
                  "%s: window %d's events: %s" % (d, wid, ev))
            path, data, mtime = files[d]
            with open(path, "rb") as f:
                check(f.read() == data and os.stat(path).st_mtime_ns == mtime,
                      "%s: the refused window was written to %s" % (d, path))

            # The job still takes a window it can say.
            wid = c.add_window(job, {"start_step": 100,
                                     "stop_step": 104})["id"]
            wait_for(lambda: (lambda x: x if x and x["state"] == "written"
                              else None)(window_state(c, job, wid)), 15,
                     "%s: the step window written after the refusal" % d)


if __name__ == "__main__":
    main(test)
