#!/usr/bin/python3
"""A segment nobody serves is removed by its last user: real ranks
(dynprof-train-sim, and one over the Python binding) with no agent leave no
dynprof.<job> behind once the last of them exits, while one still runs the file
stays; a segment an agent served stays when its ranks exit (an agent
restarting adopts it, with the events in its slots' logs), and a rank that
opens a job's name while another removes it gets a segment of its own."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402

JOB = "unserved-%d" % os.getpid()


def seg(node, job):
    return os.path.join(node.shm, "dynprof." + job)


def exited(p, timeout=60):
    rc = p.wait(timeout)
    check(rc == 0, "%s exited %s:\n%s" % (p.name, rc, p.output()[-2000:]))


def test():
    with Cluster("unserved") as c:
        c.start_coordinator(heartbeat_ms=500)
        n = c.node("n0")            # no agent on it (yet)

        # Two ranks: the first to exit leaves the file to the second.
        long = n.start_rank(JOB, 0, rate=50, max_steps=150)
        wait_for(lambda: os.path.exists(seg(n, JOB)), 10, "rank 0's segment")
        short = n.start_rank(JOB, 1, rate=50, max_steps=10)
        exited(short)
        check(os.path.exists(seg(n, JOB)),
              "rank 1, not the last user, removed the segment")
        exited(long)
        check(not os.path.exists(seg(n, JOB)),
              "the last rank left %s behind" % seg(n, JOB))
        log("no agent: the last of two ranks removed the segment")

        # Over the Python binding, closed at the interpreter's exit.
        py = n.start_rank(JOB + "-py", 0, rate=50, max_steps=10, python=True)
        exited(py)
        check(not os.path.exists(seg(n, JOB + "-py")),
              "a Python rank left its segment behind")

        # Ranks one after another on the same name, each removing it at exit:
        # each opens a whole segment of its own, none fails.
        for i in range(20):
            p = n.start_rank(JOB + "-race", i % 4, rate=500, max_steps=3)
            if i % 4 == 3:
                exited(p)
        for p in list(n.ranks.values()):
            exited(p)
        check(not os.path.exists(seg(n, JOB + "-race")),
              "the racing ranks left their segment behind")
        log("20 ranks opening and closing the same name: nothing left")

        # Served once: kept for the agent, whatever comes.
        n.start_agent()
        p = n.start_rank(JOB, 0, rate=50, max_steps=100)
        c.wait_ranks(JOB, 1, min_step=5)
        exited(p)
        time.sleep(0.5)
        check(os.path.exists(seg(n, JOB)),
              "a segment the agent served went with its rank")
        n.agent.stop()
        p = n.start_rank(JOB, 0, rate=50, max_steps=10)
        exited(p)
        check(os.path.exists(seg(n, JOB)),
              "a segment an agent served went while its agent was away")
        log("served once: kept across its ranks' exits and its agent's")


if __name__ == "__main__":
    main(test)
