#!/usr/bin/python3
"""An agent that stops cleanly says goodbye: real agents, one stopped with
SIGTERM, one with SIGKILL.  The first node shows "left", the second "lost",
in /v1/nodes, the job's summary (node_counts), the page's node rows
(/v1/jobs/J/nodes) and dynprofctl status; an agent of the left node that
connects again makes it "connected"."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (CTL, Cluster, binary, check, log, main,  # noqa: E402
                     wait_for)

JOB = "left-%d" % os.getpid()


def states(c):
    code, body = c.http("GET", "/v1/nodes")
    check(code == 200, "GET /v1/nodes: %s %s" % (code, body))
    return {n["node"]: n["state"] for n in body["nodes"]}


def page_states(c):
    code, body = c.http("GET", "/v1/jobs/%s/nodes" % JOB)
    check(code == 200, "GET /v1/jobs/%s/nodes: %s %s" % (JOB, code, body))
    i = body["fields"].index("state")
    return {row[0]: row[i] for row in body["nodes"]}


def test():
    with Cluster("left") as c:
        c.start_coordinator(heartbeat_ms=500)
        a, b = c.node("a"), c.node("b")
        for n, rank in ((a, 0), (b, 1)):
            n.start_agent()
            n.start_rank(JOB, rank, rate=50)
        c.wait_ranks(JOB, 2, min_step=5)
        check(states(c) == {"a": "connected", "b": "connected"},
              "before: %s" % states(c))

        # trace --wait on rank 0 (node a) says the node left as it happens.
        env = dict(os.environ, DYNPROF_COORDINATOR=c.url())
        errp = os.path.join(c.dir, "wait.err")
        with open(errp, "w") as err:
            tr = subprocess.Popen([binary(CTL), "trace", JOB, "--in", "2000",
                                   "--steps", "1", "--ranks", "0", "--wait",
                                   "--timeout", "5"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=err)
        wait_for(lambda: any(w["stop_step"] == w["start_step"] for w in
                             c.status(JOB)["windows"]), 10, "trace's window")
        rc = a.agent.stop()
        check(rc == 0, "agent a exited %s on SIGTERM" % rc)
        wait_for(lambda: states(c).get("a") == "left", 10, "node a left")
        check(tr.wait(30) == 3, "trace --wait did not time out")
        said = open(errp).read()
        check("trace: 1 node of job %s left, its agent stopped (a):" % JOB
              in said and ", 1 node left" in said,
              "trace --wait said:\n%s" % said)
        b.agent.kill9()
        wait_for(lambda: states(c).get("b") == "lost", 10, "node b lost")
        check(states(c) == {"a": "left", "b": "lost"}, "after: %s" % states(c))
        nc = c.status(JOB)["node_counts"]
        check(nc["left"] == 1 and nc["lost"] == 1 and nc["connected"] == 0,
              "node_counts: %s" % nc)
        check(page_states(c) == {"a": "left", "b": "lost"},
              "the page's nodes: %s" % page_states(c))
        r = c.ctl("status", JOB)
        check(r.returncode == 0 and "(1 lost) (1 left)" in r.stdout and
              "nodes: 0 connected, 1 lost, 1 left;" in r.stdout,
              "dynprofctl status: %s" % r.stdout)
        log("SIGTERM: left; SIGKILL: lost")

        a.start_agent()
        wait_for(lambda: states(c).get("a") == "connected", 10,
                 "node a connected again")
        check(states(c)["b"] == "lost", "b: %s" % states(c))


if __name__ == "__main__":
    main(test)
