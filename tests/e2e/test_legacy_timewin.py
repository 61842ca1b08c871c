#!/usr/bin/python3
"""A time window for legacy jobs (docs/legacy.md): the real coordinator and an
agent with --legacy-dir serving a torch_npu and a MindSpore 2.5 job.  Their
config files count steps only, so the agent refuses the window saying why:
the reason reaches the operator in the job's status (its legacy report and
the window's state "refused"), in dynprofctl status, and in the event that
says the window ended (its refused_reason, in GET .../events and in
dynprofctl status --follow).  Nothing is written to the jobs' files, and a
step window after it is written as usual.  The coordinator restarted on its
store still says the window refused and why, in the status and the events.
One scenario per run, named by the first argument: sqlite (the default) or
etcd (a real etcd on loopback, tests/support/etcd.py)."""

import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (CTL, Cluster, binary, check, log, main,  # noqa: E402
                     wait_for)
import etcd  # noqa: E402
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


def done_event(c, job, wid):
    """The event that says window wid ended, or None."""
    ev = [e for e in events(c, job) if e.get("type") == "window" and
          e.get("window") == wid and e.get("change") == "done"]
    return ev[0] if ev else None


def follow(c, job):
    """dynprofctl status JOB --follow, its output into a file: (proc,
    path)."""
    path = os.path.join(c.dir, "follow-%s.out" % job)
    env = dict(os.environ)
    env["DYNPROF_COORDINATOR"] = c.url()
    with open(path, "w") as out:
        p = subprocess.Popen([binary(CTL), "status", job, "--follow"],
                             env=env, stdout=out, stderr=subprocess.STDOUT)
    c.cleanups.append(lambda: (p.kill(), p.wait()))
    return p, path


def restart(c, extra):
    c.coord.stop(timeout=10)
    c.procs.remove(c.coord)
    c.start_coordinator(heartbeat_ms=200, extra=extra)

    def leading():
        code, body = c.http("GET", "/healthz", timeout=5)
        return code == 200 and body.get("role") in (None, "leader",
                                                    "standalone")
    wait_for(leading, 30, "the coordinator leading again")


def scenario_sqlite():
    with Cluster("legacytw") as c:
        run(c, ())


def scenario_etcd():
    with Cluster("legacytw-etcd") as c:
        got = etcd.for_cluster(c, "legacytw")
        if got is None:
            return 1
        run(c, got[1])
    return 0


def run(c, extra):
    c.start_coordinator(heartbeat_ms=200, extra=extra)
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

    followers = {d: follow(c, job) for d, job in jobs.items()}
    # Each follows from the status it printed: windows made after it.
    for d, (p, path) in followers.items():
        wait_for(lambda: "nodes:" in open(path).read(), 15,
                 "%s: dynprofctl status --follow's status" % d)
    refused = {}
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
              ev[0].get("duration_ms") == 2000 and
              "refused_reason" not in ev[0] and
              ev[1].get("refused_reason") == want,
              "%s: window %d's events: %s" % (d, wid, ev))
        # Followed live: both lines say the window's times.
        lines = ["window %d at %s for 2000 ms: scheduled," % (wid, w["at"]),
                 "window %d at %s for 2000 ms: done, refused by the "
                 "nodes: %s" % (wid, w["at"], want)]
        p, path = followers[d]
        try:
            wait_for(lambda: all(x in open(path).read() for x in lines), 15,
                     "%s: dynprofctl status --follow saying %r" % (d, lines))
        except Exception:
            log("dynprofctl status --follow said:\n" + open(path).read())
            raise
        p.kill()
        p.wait()
        refused[d] = (job, wid, want)
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

    # The store holds the refusal: a coordinator restarted on it still
    # says the window refused and why, in the status and its events.
    restart(c, extra)
    for d, (job, wid, want) in refused.items():
        got = [x for x in c.status(job)["windows"] if x["id"] == wid][0]
        check(got["state"] == "refused" and
              got.get("refused_reason") == want,
              "%s: after a restart window %d is %s" % (d, wid, got))
        ev = done_event(c, job, wid)
        log("%s: after a restart: %s" % (d, ev))
        check(ev is not None and ev.get("refused_reason") == want,
              "%s: after a restart window %d's done event: %s" % (
                  d, wid, ev))


SCENARIOS = {"sqlite": scenario_sqlite, "etcd": scenario_etcd}


def test():
    name = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    if name not in SCENARIOS:
        print("usage: test_legacy_timewin.py [%s]" % "|".join(SCENARIOS))
        return 1
    return SCENARIOS[name]()


if __name__ == "__main__":
    main(test)
