#!/usr/bin/python3
"""Rank labels through the real library, agent and coordinator: eight ranks
laid out as pp=2 x tp=2 x dp=2 on two nodes say their labels in
DYNPROF_LABELS; GET /ranks shows each rank's labels and filters by a
selector; a bad selector is a 400 that says why; the labels survive a
restart of the coordinator (its SQLite store)."""

import os
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402

JOB = "labels-%d" % os.getpid()


def layout(rank):
    return {"pp": str(rank // 4), "tp": str(rank // 2 % 2), "dp": str(rank % 2)}


def ranks(c, selector=None):
    q = "?limit=1000" + ("&label=" + urllib.parse.quote(selector)
                         if selector is not None else "")
    code, page = c.http("GET", "/v1/jobs/%s/ranks%s" % (JOB, q))
    check(code == 200, "GET ranks %s: %s %s" % (q, code, page))
    return {r["rank"]: r for r in page["ranks"]}


def check_labels(c):
    got = ranks(c)
    check(sorted(got) == list(range(8)), "ranks %s" % sorted(got))
    for r, row in got.items():
        check(row.get("labels") == layout(r), "rank %d labels %s, want %s" % (
            r, row.get("labels"), layout(r)))
    for sel, want in (("pp=1", [4, 5, 6, 7]),
                      ("pp=0,tp in (1)", [2, 3]),
                      ("dp!=0", [1, 3, 5, 7]),
                      ("tp notin (0), pp==1", [6, 7]),
                      ("ep", []),
                      ("dp", list(range(8)))):
        got = sorted(ranks(c, sel))
        check(got == want, "label=%s: ranks %s, want %s" % (sel, got, want))


def test():
    with Cluster("labels") as c:
        c.start_coordinator()
        for i in range(2):
            n = c.node("n%d" % i)
            n.start_agent()
            for r in range(4 * i, 4 * i + 4):
                # Given in any order, with spaces: the canonical form sorts.
                lab = layout(r)
                n.start_rank(JOB, r, rate=20, labels=" tp=%s, dp=%s,pp=%s" % (
                    lab["tp"], lab["dp"], lab["pp"]))
        c.wait_ranks(JOB, 8)
        check_labels(c)
        # A window: the job is stored (its rows outlive the coordinator).
        w = c.add_window(JOB, {"in_steps": 20, "steps": 2})
        c.wait_window_done(JOB, w["id"], list(range(8)), timeout=60)

        for sel, why in (("pp>1", "a term is"), ("pp in 1", "takes a list"),
                         ("", "empty")):
            code, body = c.http("GET", "/v1/jobs/%s/ranks?label=%s" % (
                JOB, urllib.parse.quote(sel)))
            check(code == 400 and why in str(body.get("error")) and
                  body.get("field") == "label",
                  "label=%r: %s %s, want 400 saying %r" % (sel, code, body, why))

        log("restarting the coordinator")
        c.coord.stop()
        c.start_coordinator()
        wait_for(lambda: len(ranks(c)) == 8, 30, "ranks after the restart")
        check_labels(c)
        with urllib.request.urlopen(c.url() + "/metrics", timeout=10) as f:
            text = f.read().decode()
        check("dynprof_labels_refused_total 0\n" in text,
              "labels refused on /metrics: %s" % [
                  l for l in text.splitlines() if "labels" in l])


if __name__ == "__main__":
    main(test)
