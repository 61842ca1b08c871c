#!/usr/bin/python3
"""The ranks of a window compared from their traces: three real PyTorch
(CPU) ranks under dynprof.torch's hook (tests/support/torch_rank.py), rank 1
made slow by a longer sleep in each step, one window profiled by
torch.profiler on all three; the agent collects each trace into its
--trace-store, reads the ProfilerStep#N spans and the busiest operators out
of it while packing, and sends that summary with the rank's `collected`
event.  GET .../windows/W/compare and `dynprofctl compare` give each rank's
step times (as the trace itself has them: checked against torch's own JSON),
rank 1 as the slowest with its offset from the median, and still do after
the coordinator restarts (the summary is stored with the event).  A file
planted in rank 2's trace directory that is no JSON gives that rank's
reason, and its real trace is read all the same."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (PYTHON, Cluster, Proc, check, log, main,  # noqa: E402
                     python_env, wait_for)

JOB = "compare-%d" % os.getpid()
RANKS = [0, 1, 2]
STEP_MS = 30
SLOW = 3.0          # rank 1: 90 ms a step, the others 30
TORCH_RANK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "support", "torch_rank.py")


def trace_steps(path):
    """step -> duration in us of the ProfilerStep#N spans in torch's trace."""
    with open(path) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    out = {}
    for e in evs:
        name = e.get("name", "")
        if e.get("ph") == "X" and name.startswith("ProfilerStep#") and \
                e.get("cat") != "gpu_user_annotation":
            out[int(name[len("ProfilerStep#"):])] = int(e["dur"] + 0.5)
    return out


def test():
    with Cluster("compare") as c:
        n, store, _ = c.start_collecting(2)
        for r in RANKS:
            env = python_env(dict(os.environ))
            env["DYNPROF_SHM_DIR"] = n.shm
            env["DYNPROF_AGENT_SOCKET"] = n.sock
            env["DYNPROF_OUTPUT_ROOT"] = n.out
            p = Proc("torch-%d" % r, [
                PYTHON, TORCH_RANK, "--job", JOB, "--rank", str(r),
                "--steps", "100000", "--step-ms", str(STEP_MS), "--slow",
                str(SLOW if r == 1 else 1.0)],
                os.path.join(n.dir, "rank%d.log" % r), env=env)
            c.procs.append(p.start())
        c.wait_ranks(JOB, len(RANKS), timeout=120, min_step=3)
        w = c.add_window(JOB, {"in_steps": 8, "steps": 8})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        # Planted while the window runs (its directory is made at its
        # start, its trace written at its end): packed, read, refused.
        d2 = os.path.join(n.out, "rank2_start%d_stop%d" % (a, b))
        wait_for(lambda: os.path.isdir(d2) or None, 60,
                 "rank 2's trace directory", interval=0.01)
        with open(os.path.join(d2, "junk.pt.trace.json"), "w") as f:
            f.write("this is no JSON\n")
        c.wait_window_done(JOB, wid, RANKS, timeout=180)

        def compared():
            code, body = c.http("GET", "/v1/jobs/%s/windows/%d/compare" %
                                (JOB, wid))
            check(code == 200, "compare: %s %s" % (code, body))
            return body if body["counts"]["compared"] == len(RANKS) else None
        body = wait_for(compared, 90, "every rank compared")
        log("compare: %s" % json.dumps(body)[:600])

        ranks = {x["rank"]: x for x in body["ranks"]}
        for r in RANKS:
            d = os.path.join(n.out, "rank%d_start%d_stop%d" % (r, a, b))
            want = trace_steps(os.path.join(d, "rank%d.pt.trace.json" % r))
            got = {s["step"]: s["dur_us"] for s in ranks[r]["steps"]}
            check(len(want) >= 5 and got == want,
                  "rank %d: steps %s, torch's trace has %s" % (r, got, want))
            check(ranks[r]["format"] == "kineto", "rank %d: %s" % (r, ranks[r]))
            fast = r != 1
            med = ranks[r]["median_us"]
            check((med < 2.0 * STEP_MS * 1000) if fast else
                  (med > SLOW * STEP_MS * 1000 * 0.95),
                  "rank %d: median %d us" % (r, med))
        check("error" not in ranks[0] and "error" not in ranks[1],
              "ranks 0, 1: %s %s" % (ranks[0], ranks[1]))
        check("junk.pt.trace.json: not JSON" in ranks[2].get("error", ""),
              "rank 2: %s" % ranks[2])
        slow = body["slowest"]
        check(slow[0]["rank"] == 1 and slow[0]["offset_pct"] > 100 and
              slow[0]["offset_us"] == ranks[1]["median_us"] -
              body["step"]["median_us"], "slowest: %s" % slow)
        check(body["step"]["median_us"] in (ranks[0]["median_us"],
                                            ranks[2]["median_us"]) and
              body["step"]["max_us"] == ranks[1]["median_us"],
              "step: %s" % body["step"])
        # No process group: nothing in collectives, compute is the step;
        # the steps do not agree, so the straggler is the slowest by step.
        check(not body["synchronous"] and all(
            ranks[r]["comm_us"] == 0 and ranks[r]["compute_us"] ==
            ranks[r]["median_us"] for r in (0, 1)),
              "compute: %s %s" % (ranks[0], ranks[1]))
        st = body["straggler"]
        check(st is not None and st["rank"] == 1 and st["by"] == "step" and
              st["says"].startswith("rank 1: step "), "straggler: %s" % st)
        ops = {o["name"]: o for o in body["operators"]}
        check(ops and all(o["ranks"] >= 2 for o in ops.values()),
              "operators: %s" % body["operators"])
        check("read job %s window %d rank 0's trace (kineto)" % (JOB, wid)
              in n.agent.output() and "rank 2: its trace not read whole: "
              in n.agent.output(), "the agent's log says nothing of it")

        out = c.ctl("compare", JOB, str(wid))
        check(out.returncode == 0 and "rank 1 " in out.stdout.split(
            "SLOWEST")[1].splitlines()[1] and "3 ranks compared" in out.stdout,
              "dynprofctl compare:\n%s" % out.stdout)
        log("dynprofctl compare:\n%s" % out.stdout)

        # From the store after a restart: the same.
        c.coord.stop()
        c.start_coordinator()
        again = wait_for(compared, 30, "the comparison after a restart")
        check(again["ranks"] == body["ranks"] and
              again["slowest"] == body["slowest"],
              "after a restart: %s" % json.dumps(again)[:600])
        code, _ = c.http("GET", "/v1/jobs/%s/windows/999/compare" % JOB)
        check(code == 404, "compare of no window: %s" % code)


if __name__ == "__main__":
    main(test)
