#!/usr/bin/python3
"""A job given its own trace store (PUT /v1/jobs/J/trace-store) has its
traces packed there by an agent whose --trace-store-allow holds it, while
another job's go to the agent's --trace-store; a store under no allowed
directory, and one a symbolic link was swapped into, are refused as
collect_failed saying why (nothing written through the link); the setting
survives a coordinator restart."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402

OWN = "own-%d" % os.getpid()
OTHER = "oth-%d" % os.getpid()


def test():
    with Cluster("collown") as c:
        allow = os.path.join(c.dir, "allowed")
        outside = os.path.join(c.dir, "outside")
        os.makedirs(allow)
        os.makedirs(outside)
        n, store, _ = c.start_collecting(1, ["--trace-store-allow", allow])
        n.start_rank(OWN, 0, rate=50)
        n.start_rank(OTHER, 0, rate=50)
        c.wait_ranks(OWN, 1, min_step=5)
        c.wait_ranks(OTHER, 1, min_step=5)

        def put_store(value):
            code, body = c.http("PUT", "/v1/jobs/%s/trace-store" % OWN,
                                {"store": value})
            check(code == 200, "trace-store %s: %s %s" % (value, code, body))

        def trace(job, wid):
            code, idx = c.http("GET", "/v1/jobs/%s/windows/%d/traces" %
                               (job, wid))
            check(code == 200, "traces index: %s %s" % (code, idx))
            t = [t for t in idx["traces"] if t["state"] != "pending"]
            return t[0] if t else None

        def window(job, what):
            w = c.add_window_when_ready(job, {"in_steps": 20, "steps": 10})
            c.wait_window_done(job, w["id"], [0], timeout=60)
            t = wait_for(lambda: trace(job, w["id"]), 60, what)
            log("%s window %d: %s" % (job, w["id"], t))
            return w["id"], t

        own_dir = os.path.join(allow, "jobs", "a")
        put_store(own_dir)
        wid, t = window(OWN, "the own store's window collected")
        rel = os.path.join(OWN, "window-%d" % wid, "rank-0.tar.zst")
        check(t["state"] == "collected" and
              t["location"] == os.path.join(own_dir, rel),
              "own store's trace: %s" % t)
        check(os.path.isfile(os.path.join(own_dir, rel)), "not in %s" %
              own_dir)
        check(not os.path.exists(os.path.join(store, OWN)),
              "the own store's job in the agent's store: %s" %
              os.listdir(store))
        owid, t = window(OTHER, "the other job's window collected")
        rel = os.path.join(OTHER, "window-%d" % owid, "rank-0.tar.zst")
        check(t["state"] == "collected" and
              os.path.isfile(os.path.join(store, rel)),
              "other job's trace: %s" % t)

        def refused(value, what, reason, leak):
            # The job's store set to value: its window's collection failed
            # saying reason, nothing written in outside.
            put_store(value)
            wid, t = window(OWN, what)
            check(t["state"] == "collect_failed" and reason in t["error"],
                  "%s: %s" % (what, t))
            check(os.listdir(outside) == [], "%s: %s" %
                  (leak, os.listdir(outside)))
            return wid

        # Under no --trace-store-allow: refused, saying so.
        wid = refused(outside, "the store not allowed refused",
                      "under no --trace-store-allow", "written outside")
        r = c.status(OWN)["ranks"][0]
        check(len(events_of(r, "collect_failed", wid)) == 1,
              "rank events %s" % r["events"])

        # A symbolic link swapped into the store's path: not followed.
        swapped = os.path.join(allow, "swapped")
        os.symlink(outside, swapped)
        refused(os.path.join(swapped, "x"), "the swapped store refused",
                "symbolic link is not followed", "written through the link")

        # Kept across a coordinator restart: the next window goes there.
        put_store(own_dir)
        c.coord.stop()
        c.start_coordinator()
        code, rules = c.http("GET", "/v1/jobs/%s/rules" % OWN)
        check(code == 200 and rules["trace_store"] == own_dir,
              "rules after a restart: %s %s" % (code, rules))
        wid, t = window(OWN, "the own store's window after a restart")
        rel = os.path.join(OWN, "window-%d" % wid, "rank-0.tar.zst")
        check(t["state"] == "collected" and
              os.path.isfile(os.path.join(own_dir, rel)),
              "after a restart: %s" % t)
        check(os.listdir(outside) == [], "outside: %s" % os.listdir(outside))
        check(os.listdir(store) == [OTHER], "the agent's store: %s" %
              os.listdir(store))


if __name__ == "__main__":
    main(test)
