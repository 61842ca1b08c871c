#!/usr/bin/python3
"""Rank labels through the real library, agent and coordinator: 64 ranks
laid out as pp=4 x tp=4 x dp=4 on eight nodes say their labels in
DYNPROF_LABELS; GET /ranks shows each rank's labels and filters by a
selector; a bad selector is a 400 that says why; windows naming ranks by
select, nodes, one_per and group_of profile exactly those ranks; the labels
survive a restart of the coordinator (its SQLite store)."""

import os
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, events_of, log, main,  # noqa: E402
                     wait_for)

JOB = "labels-%d" % os.getpid()


RANKS = 64


def layout(rank):
    """tp varies fastest, then dp, then pp (as Megatron orders them)."""
    return {"pp": str(rank // 16), "tp": str(rank % 4),
            "dp": str(rank // 4 % 4)}


def where(**want):
    """The ranks whose labels hold every key=value of want."""
    return [r for r in range(RANKS)
            if all(layout(r)[k] == v for k, v in want.items())]


def ranks(c, selector=None):
    q = "?limit=1000" + ("&label=" + urllib.parse.quote(selector)
                         if selector is not None else "")
    code, page = c.http("GET", "/v1/jobs/%s/ranks%s" % (JOB, q))
    check(code == 200, "GET ranks %s: %s %s" % (q, code, page))
    return {r["rank"]: r for r in page["ranks"]}


def check_labels(c):
    got = ranks(c)
    check(sorted(got) == list(range(RANKS)), "ranks %s" % sorted(got))
    for r, row in got.items():
        check(row.get("labels") == layout(r), "rank %d labels %s, want %s" % (
            r, row.get("labels"), layout(r)))
    for sel, want in (("pp=1", where(pp="1")),
                      ("pp=0,tp in (1)", where(pp="0", tp="1")),
                      ("dp!=0", [r for r in range(RANKS)
                                 if layout(r)["dp"] != "0"]),
                      ("tp notin (0,1,2), pp==3", where(pp="3", tp="3")),
                      ("ep", []),
                      ("dp", list(range(RANKS)))):
        got = sorted(ranks(c, sel))
        check(got == want, "label=%s: ranks %s, want %s" % (sel, got, want))


def test():
    with Cluster("labels") as c:
        c.start_coordinator()
        for i in range(8):
            n = c.node("n%d" % i)
            n.start_agent()
            for r in range(8 * i, 8 * i + 8):
                # Given in any order, with spaces: the canonical form sorts.
                lab = layout(r)
                n.start_rank(JOB, r, rate=20, labels=" tp=%s, dp=%s,pp=%s" % (
                    lab["tp"], lab["dp"], lab["pp"]))
        c.wait_ranks(JOB, RANKS, timeout=90)
        check_labels(c)
        # Windows naming ranks by what they are, one after the other (the
        # first also stores the job: its rows outlive the coordinator).
        for named, want in (({"select": "pp=1,tp in (0)"},
                             where(pp="1", tp="0")),
                            ({"one_per": "pp"}, [0, 16, 32, 48]),
                            ({"group_of": {"rank": 21, "vary": "tp"}},
                             where(pp="1", dp="1")),
                            ({"nodes": "n0,n2", "select": "dp=1"},
                             [r for r in where(dp="1") if r // 8 in (0, 2)])):
            body = {"in_steps": 20, "steps": 2}
            body.update(named)
            w = c.add_window(JOB, body)
            st = c.wait_window_done(JOB, w["id"], want, timeout=60)
            got = sorted(r["rank"] for r in st["ranks"]
                         if events_of(r, "started", w["id"]))
            check(got == want, "%s: ranks %s profiled, want %s" % (
                named, got, want))
        # The same through dynprofctl, as an operator types it.
        p = c.ctl("trace", JOB, "--in", "20", "--steps", "2", "--select",
                  "tp in (2,3)", "--group-of", "6:pp", "--wait", "--timeout",
                  "60")
        check(p.returncode == 0 and "ranks 6,22,38,54" in p.stdout,
              "dynprofctl trace --group-of 6:pp: %d %s" % (p.returncode,
                                                           p.stdout))
        p = c.ctl("status", JOB)
        check(p.returncode == 0 and "LABELS" in p.stdout and
              "dp=1,pp=1,tp=1" in p.stdout,
              "dynprofctl status: %d %s" % (p.returncode, p.stdout))
        p = c.ctl("trace", JOB, "--in", "20", "--steps", "2",
                  "--group-of", "6")
        check(p.returncode != 0 and "RANK:KEY" in p.stdout,
              "--group-of 6: %d %s" % (p.returncode, p.stdout))
        for body, code_want, why in (
                ({"select": "pp=9"}, 409, "no live rank"),
                ({"select": "pp>1"}, 400, "a term is"),
                ({"ranks": "0", "select": "pp=1"}, 400, "not both"),
                ({"one_per": "pp=1"}, 400, "a label's key"),
                ({"group_of": {"rank": 99, "vary": "tp"}}, 409, "not known"),
                ({"group_of": {"rank": 1}}, 400, "group_of is"),
                ({"nodes": "n0,,n1"}, 400, "node names")):
            body.update({"in_steps": 20, "steps": 2})
            code, ans = c.http("POST", "/v1/jobs/%s/windows" % JOB, body)
            check(code == code_want and why in str(ans.get("error")),
                  "%s: %s %s, want %d saying %r" % (body, code, ans,
                                                   code_want, why))

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
        wait_for(lambda: len(ranks(c)) == RANKS, 30,
                 "ranks after the restart")
        check_labels(c)
        with urllib.request.urlopen(c.url() + "/metrics", timeout=10) as f:
            text = f.read().decode()
        check("dynprof_labels_refused_total 0\n" in text,
              "labels refused on /metrics: %s" % [
                  l for l in text.splitlines() if "labels" in l])


if __name__ == "__main__":
    main(test)
