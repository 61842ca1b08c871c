#!/usr/bin/python3
"""The training process never blocks on dynprof: with the node's agent stopped
(SIGSTOP: its socket still exists but nobody reads it, so its queue fills), a
rank steps through 15 windows per run, 20 runs in a row (far more datagrams than
the socket queue holds, so the library must drop events rather than wait), and
the runs keep their speed: median at least a quarter, every run at least a
twentieth, of the steps/s measured with the agent running (generous: the
machine is shared), each within its deadline.  Timing-sensitive: labelled
nosan."""

import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, TRAIN_SIM, binary, check, log, main,  # noqa: E402
                     wait_for)

JOB = "noblock-%d" % os.getpid()
STEPS = 8000000
EVERY = 500000          # a 2-step window every EVERY steps: 15 windows


def run(node, rank):
    env = dict(os.environ, DYNPROF_SHM_DIR=node.shm, DYNPROF_AGENT_SOCKET=node.sock,
               DYNPROF_OUTPUT_ROOT=node.out)
    p = subprocess.run([binary(TRAIN_SIM), "--job", JOB, "--rank", str(rank),
                        "--steps-per-sec", "0", "--max-steps", str(STEPS), "-q"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=30)
    m = re.search(r"\(([0-9.]+) steps/s\), events sent ([0-9]+), dropped ([0-9]+)",
                  p.stdout)
    check(p.returncode == 0 and m, "rank run failed (%s): %s" % (p.returncode, p.stdout))
    return float(m.group(1)), int(m.group(3))


def test():
    with Cluster("noblock") as c:
        c.start_coordinator()
        n = c.node("n0")
        n.start_agent()
        n.start_rank(JOB, 0, rate=50)       # keeps the job subscribed
        c.wait_ranks(JOB, 1, min_step=2)
        gen = 0
        for k in range(1, 16):
            w = c.add_window(JOB, {"start_step": k * EVERY, "stop_step": k * EVERY + 1})
            gen = max(gen, w.get("generation", 0))

        def applied():
            s = c.status(JOB)
            return [x for x in s.get("nodes", [])
                    if x.get("node") == "n0" and x.get("applied_generation", 0) >= gen]
        wait_for(applied, 20, "n0 applied generation %d" % gen)

        base = max(run(n, 100 + i)[0] for i in range(3))
        log("agent running: %.0f steps/s (best of 3)" % base)

        n.agent.signal(signal.SIGSTOP)
        try:
            runs = [run(n, 200 + i) for i in range(20)]
        finally:
            n.agent.signal(signal.SIGCONT)
        rates = sorted(r for r, _ in runs)
        dropped = sum(d for _, d in runs)
        median = rates[len(rates) // 2]
        log("agent stopped: min %.0f, median %.0f steps/s over %d runs; %d events "
            "dropped, none waited for" % (rates[0], median, len(rates), dropped))
        check(dropped > 0, "no event was dropped: the agent's queue never filled, "
              "the test proved nothing")
        check(median >= base / 4,
              "with the agent stopped the median run stepped at %.0f steps/s, under "
              "a quarter of %.0f with it running" % (median, base))
        check(rates[0] >= base / 20,
              "a run with the agent stopped stepped at %.0f steps/s, under a "
              "twentieth of %.0f with it running" % (rates[0], base))
        # The profiler still ran: every window of the last run has its trace.
        for k in range(1, 16):
            d = os.path.join(n.out, "rank219_start%d_stop%d" % (k * EVERY, k * EVERY + 1))
            check(os.path.exists(os.path.join(d, "trace.json")),
                  "no trace in %s: the windows did not run without the agent" % d)


if __name__ == "__main__":
    main(test)
