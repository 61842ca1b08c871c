#!/usr/bin/python3
"""dynprofctl forget of a job while its agent is away: real coordinator,
agents and ranks.  Each job's only agent is killed (SIGKILL: its segment keeps
the window, its rank runs on), the job is forgotten, and the agent comes back,
once to the same coordinator and once to a restarted one (SQLite).  The agent
subscribes with the generation it applied, which the coordinator committed
past: it is pushed the job's empty schedule at the coordinator's generation,
its segment drops the window before the rank reaches it, and no rank runs it
(no start, no trace).  The job shows again only as a job nobody scheduled,
with no window, while its rank runs; the next window gets an id after the
forgotten one's."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402

PID = os.getpid()
AHEAD = 750              # steps between the window and the rank: 15 s at 50/s


def segment(c, node, job):
    r = c.ctl("--json", "local", job, "--shm-dir", node.shm)
    check(r.returncode == 0, "dynprofctl local %s: %s" % (job, r.stdout))
    return json.loads(r.stdout)


def away(c, node, job):
    """A window of job far enough ahead, applied by node's agent, which is
    then killed, and the job forgotten; returns (window, forget's
    generation)."""
    st = c.wait_ranks(job, 1, min_step=5)
    top = st["progress"]["max_step"]
    w = c.add_window(job, {"start_step": top + AHEAD,
                           "stop_step": top + AHEAD + 4})
    wait_for(lambda: segment(c, node, job)["generation"] == w["generation"],
             10, "%s's segment at generation %d" % (node.name, w["generation"]))
    node.agent.kill9()
    wait_for(lambda: [n for n in c.http("GET", "/v1/nodes")[1]["nodes"]
                      if n["node"] == node.name and n["state"] == "lost"], 20,
             "node %s lost" % node.name)
    r = c.ctl("--json", "forget", job)
    check(r.returncode == 0, "forget %s: %d %s" % (job, r.returncode,
                                                   r.stdout))
    gen = json.loads(r.stdout)["generation"]
    log("job %s forgotten at generation %d, %s away with window %d" % (
        job, gen, node.name, w["id"]))
    check(segment(c, node, job)["windows"] != [],
          "the away agent's segment lost the window by itself")
    return w, gen


def back(c, node, job, w, gen):
    """node's agent back: the window dropped, never run."""
    node.start_agent()
    seg = wait_for(lambda: (lambda s: s if s["generation"] >= gen else None)(
        segment(c, node, job)), 10, "%s's segment past generation %d" % (
            node.name, gen))
    check(seg["windows"] == [], "the forgotten window came back with the "
          "agent: %s" % seg["windows"])
    code, body = c.http("GET", "/v1/jobs/%s" % job)
    check(code == 200 and body["generation"] == 0 and body["windows"] == [],
          "the job after the agent came back: %s %s" % (code, body))
    # Past its stop step: no rank ran it.
    c.wait_ranks(job, 1, min_step=w["stop_step"] + 5, timeout=60)
    log("%s past step %d" % (job, w["stop_step"] + 5))
    said = open(os.path.join(node.dir, "rank0.log")).read()
    check("started window" not in said, "the rank ran the forgotten "
          "window:\n%s" % said)
    check(node.trace(0, w["start_step"], w["stop_step"]) is None,
          "a trace of the forgotten window")
    st = c.status(job)
    check(st["windows"] == [] and not [
        e for e in st["ranks"][0].get("events", [])
        if e.get("window") == w["id"]],
        "the forgotten window in the job: %s" % st)
    top = st["progress"]["max_step"]
    w2 = c.add_window(job, {"start_step": top + 50, "stop_step": top + 52})
    check(w2["id"] > w["id"], "window ids after forget: %s" % w2)
    c.wait_window_done(job, w2["id"], [0], timeout=60)


def test():
    with Cluster("forget-away") as c:
        c.start_coordinator(heartbeat_ms=500)
        jobs = {"a": "away-%d" % PID, "b": "restart-%d" % PID}
        nodes = {}
        for name, job in jobs.items():
            nodes[name] = c.node(name)
            nodes[name].start_agent()
            nodes[name].start_rank(job, 0, rate=50)

        # Back to the same coordinator.
        w, gen = away(c, nodes["a"], jobs["a"])
        back(c, nodes["a"], jobs["a"], w, gen)
        log("back to the same coordinator: the window dropped")

        # Back to a restarted coordinator, which loaded no trace of the job.
        w, gen = away(c, nodes["b"], jobs["b"])
        c.coord.stop()
        c.start_coordinator(heartbeat_ms=500)
        back(c, nodes["b"], jobs["b"], w, gen)
        log("back to a restarted coordinator: the window dropped")


if __name__ == "__main__":
    main(test)
