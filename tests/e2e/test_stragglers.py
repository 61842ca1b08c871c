#!/usr/bin/python3
"""Stragglers and a rule with the real agent and real ranks: two nodes, an
agent each, four dynprof-train-sim ranks, rank 3 (on n1) stepping at 10 steps
a second where the others step at 40.  The coordinator (--straggler-lag 120)
must judge rank 3, and it alone, a straggler, slow (a quarter of the job's
rate) and then lagging the median, and n1 the node with a straggler.  A rule
added before (profile the straggler and 1 peer for 3 steps from the next
multiple of 10) must fire once, its window target rank 3 and one healthy
peer, and both ranks must run it: a start and a stop event each at the
window's steps and a trace, while the ranks it does not target run nothing.
Every wait is on the condition, with a deadline far past what an idle machine
needs."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

JOB = "straggle-%d" % os.getpid()
# Far above what ranks started a moment apart lag by (40 steps a second for
# each second between their starts on a loaded machine): rank 3, 30 steps a
# second behind, passes it in about 4 s.
LAG = 120


def ranks_of(spec):
    """The ranks of a window's "ranks" string ("1,3-5")."""
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def test():
    with Cluster("stragglers") as c:
        c.start_coordinator(heartbeat_ms=500,
                            extra=["--straggler-lag", str(LAG)])
        code, rule = c.http("POST", "/v1/jobs/%s/rules" % JOB, {
            "when": "straggler", "steps": 3, "peers": 1, "roundup": 10,
            "min_interval_s": 600, "max_per_hour": 1})
        check(code == 201, "rule: %s %s" % (code, rule))
        nodes = [c.node("n0"), c.node("n1")]
        for n in nodes:
            n.start_agent()
        for rank in range(4):
            nodes[rank // 2].start_rank(JOB, rank, rate=10 if rank == 3 else 40)
        c.wait_ranks(JOB, 4, timeout=60)

        # Its lag shows first; its rate once every rank's is measured over
        # the same ticks (straggler.c): wait for both.
        def judged():
            code, s = c.http("GET", "/v1/jobs/%s/stragglers" % JOB)
            return s if code == 200 and s.get("ranks_judged") == 4 and [
                w for w in s.get("worst_ranks", [])
                if w["rank"] == 3 and "lag" in w["reasons"] and
                "slow" in w["reasons"]] else None
        s = wait_for(judged, 90, "rank 3 judged a straggler (lag and slow) "
                     "among 4 ranks", interval=0.2)
        worst = s["worst_ranks"]
        check([w["rank"] for w in worst] == [3] and s["ranks"] == 1,
              "stragglers: %s" % s)
        check(sorted(worst[0]["reasons"]) == ["lag", "slow"] and
              worst[0]["lag"] > LAG and worst[0]["node"] == "n1",
              "rank 3: %s" % worst[0])
        check([n["node"] for n in s["worst_nodes"]] == ["n1"] and
              s["nodes"] == 1, "straggler nodes: %s" % s["worst_nodes"])
        log("rank 3 on n1 straggles: %s" % worst[0])

        r = c.wait_rule_fired(JOB)
        wid = r["last_window"]
        st = c.status(JOB)
        w = [w for w in st["windows"] if w["id"] == wid][0]
        a, b = w["start_step"], w["stop_step"]
        targets = ranks_of(w["ranks"])
        check(len(targets) == 2 and 3 in targets, "window %d ranks '%s'"
              % (wid, w["ranks"]))
        peer = [t for t in targets if t != 3][0]
        check(a % 10 == 0 and b - a == 2, "window %d steps %d-%d" % (wid, a, b))
        log("rule fired: window %d, steps %d-%d, ranks %s" % (wid, a, b,
                                                             targets))

        st = c.wait_window_done(JOB, wid, targets, timeout=120)
        for rk in targets:
            r = [x for x in st["ranks"] if x["rank"] == rk][0]
            s_, e_ = events_of(r, "started", wid), events_of(r, "stopped", wid)
            check(len(s_) == 1 and len(e_) == 1 and s_[0]["step"] == a and
                  e_[0]["step"] == b, "rank %d: started %s stopped %s" % (
                      rk, s_, e_))
            tr = nodes[rk // 2].trace(rk, a, b)
            check(tr is not None and tr["steps"] == list(range(a, b + 1)),
                  "rank %d: trace %s" % (rk, tr))
        for rk in set(range(4)) - set(targets):
            r = [x for x in st["ranks"] if x["rank"] == rk][0]
            check(not events_of(r, "started", wid) and
                  nodes[rk // 2].trace(rk, a, b) is None,
                  "rank %d, not targeted, ran window %d" % (rk, wid))
        code, rl = c.http("GET", "/v1/jobs/%s/rules" % JOB)
        check(code == 200 and rl["rules"][0]["fired_total"] == 1,
              "fired: %s" % rl)
        log("the straggler (3) and its peer (%d) ran window %d; the others "
            "nothing; the rule fired once" % (peer, wid))


if __name__ == "__main__":
    main(test)
