#!/usr/bin/python3
"""The status page as a person uses it, in Debian's chromium driven by
playwright-core (tests/browser/ui_click.js, packages pinned in
tests/browser/package-lock.json, installed by npm ci into the build tree):
a real coordinator with an operator and a viewer token, two real agents and
four dynprof-train-sim ranks.

- The operator schedules a window by filling the form and clicking: every
  rank runs it (its trace on disk, its options those the form set) and the
  page shows it done; so does a time window ("at +5s for 2s, tolerance
  250ms": every rank started it at its time; the summary's "ran" and the
  page's label say the steps its ranks ran it at), and a time the API cannot read
  is refused in its words; ranks beyond the job's are scheduled with
  dynprofctl's warning; a start behind every rank is refused with the API's
  409 in the API's words; a window far ahead is cancelled by its button.
- The viewer sees the form and a live window's cancel disabled with the
  API's reason; enabled by hand, both are refused (403) and nothing changes.
- The agents collect the traces into a shared --trace-store: the window's
  traces button lists every rank's archive (its path in the store, size and
  sha256 as the index has them) and the ranks compared by their step times.
- After a coordinator restart the page shows the windows, the rate and the
  feed of before; after an agent's goodbye its node shows "left"."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (SKIP, Cluster, build_dir, check, events_of,  # noqa: E402
                     log, main, npm_ci, parse_time, wait_for)

JOB = "click-%d" % os.getpid()
CHROMIUM = "/usr/bin/chromium"
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "browser")
FAR = 10 ** 9            # a step no rank reaches in this test


def options_table():
    out = subprocess.run([os.environ["DYNPROF_OPTIONS_TABLE"]], check=True,
                         stdout=subprocess.PIPE).stdout
    return [{k: r[k] for k in ("name", "type", "min", "max", "default",
                               "values")} for r in json.loads(out)]


def scene(c, modules, name, facts):
    """Runs one scene of ui_click.js; returns what it saw."""
    facts = dict(facts, url=c.url(), job=JOB, chromium=CHROMIUM,
                 shot=os.path.join(build_dir(), "tests", "artefacts",
                                   "ui_click_%s.png" % name))
    os.makedirs(os.path.dirname(facts["shot"]), exist_ok=True)
    env = dict(os.environ, NODE_PATH=modules)
    r = subprocess.run(["node", os.path.join(SRC, "ui_click.js"), name],
                       input=json.dumps(facts), env=env, timeout=180,
                       capture_output=True, text=True)
    check(r.returncode == 0, "scene %s: %s%s (screenshot %s)" % (
        name, r.stderr, r.stdout, facts["shot"]))
    seen = json.loads(r.stdout)
    log("scene %s: %s" % (name, seen))
    return seen


def window(c, wid):
    return [w for w in c.status(JOB)["windows"] if w["id"] == wid][0]


def test():
    if not os.access(CHROMIUM, os.X_OK):
        print("SKIP: %s is missing (scripts/deps.sh, the \"test\" set)" %
              CHROMIUM)
        return SKIP
    modules = npm_ci(SRC, "test-browser")
    with Cluster("click") as c:
        tokens = {}
        for role in ("operator", "viewer"):
            tokens[role] = "%s-%d-token" % (role, os.getpid())
            with open(os.path.join(c.dir, role + ".token"), "w") as f:
                f.write(tokens[role] + "\n")
        flags = ["--admin-token-file", os.path.join(c.dir, "operator.token"),
                 "--viewer-token-file", os.path.join(c.dir, "viewer.token")]
        c.start_coordinator(heartbeat_ms=500, extra=flags)
        c.token = tokens["operator"]
        nodes = [c.node("a"), c.node("b")]
        store = os.path.join(c.dir, "store")
        os.makedirs(store)
        for i, n in enumerate(nodes):
            n.start_agent(extra=["--trace-store", store, "--trace-settle",
                                 "1"])
            for k in range(2):
                n.start_rank(JOB, 2 * i + k, rate=50)
        c.wait_ranks(JOB, 4, min_step=5)
        facts = dict(operator=tokens["operator"], viewer=tokens["viewer"],
                     table=options_table(), nranks=4, ranks="0-3", far=FAR)

        seen = scene(c, modules, "schedule", facts)
        done, cancelled = seen["done"], seen["cancelled"]["id"]
        w = window(c, done["id"])
        check(w["state"] == "done" and w["rank_counts"]["stopped"] == 4 and
              w["ranks"] == "0-3", "window %d: %s" % (done["id"], w))
        check(w["options"]["with_stack"] is True and
              w["options"]["profiler_level"] == 1 and
              w["options"]["aicore_metrics"] == -1,
              "the options the form set: %s" % w["options"])
        for i, n in enumerate(nodes):
            for rank in (2 * i, 2 * i + 1):
                check(n.trace(rank, w["start_step"], w["stop_step"])
                      is not None, "rank %d wrote no trace for window %d" %
                      (rank, done["id"]))
        # The time window made by the form: its fields as the API's, run
        # by every rank (each started it at or after its time).
        timed = seen["timed"]
        w = window(c, timed["id"])
        check(w["state"] == "done" and w["rank_counts"]["stopped"] == 4 and
              w["ranks"] == "0-3" and w["at"] == timed["at"] and
              w["duration_ms"] == 2000 and w["tolerance_ms"] == 250 and
              w["start_step"] == 0, "time window %d: %s" % (timed["id"], w))
        at = parse_time(w["at"])
        starts, stops = [], []
        for r in c.status(JOB)["ranks"]:
            a = events_of(r, "started", timed["id"])
            b = events_of(r, "stopped", timed["id"])
            check(a and b and parse_time(a[0]["time"]) >= at - 0.05 and
                  parse_time(b[0]["time"]) <= at + 2.0 + 1.0,
                  "rank %d's time window %d: %s %s (at %s)" % (
                      r["rank"], timed["id"], a, b, w["at"]))
            starts.append(a[0])
            stops.append(b[0])
        # When and at which steps its ranks ran it: the summary's, from
        # their events, and the page's label says the steps.
        ran = {"first_start": min(e["time"] for e in starts),
               "last_stop": max(e["time"] for e in stops),
               "start_step": min(e["step"] for e in starts),
               "stop_step": max(e["step"] for e in stops)}
        check(w.get("ran") == ran, "time window %d ran %s, its ranks' "
              "events %s" % (timed["id"], w.get("ran"), ran))
        check("(steps %d-%d)" % (ran["start_step"], ran["stop_step"]) in
              timed["row"], "the page's label of time window %d: %s, its "
              "ranks ran steps %d-%d" % (timed["id"], timed["row"],
                                         ran["start_step"], ran["stop_step"]))
        check(window(c, cancelled)["state"] == "cancelled",
              "window %d: %s" % (cancelled, window(c, cancelled)))
        check(not [x for x in c.status(JOB)["windows"]
                   if x["start_step"] == 1], "the refused window is there")
        check([x for x in c.status(JOB)["windows"]
               if x["start_step"] == FAR + 1000 and x["ranks"] == "0-7" and
               x["state"] == "scheduled"],
              "the window warned about is not scheduled: %s" %
              c.status(JOB)["windows"])

        # The window's traces, collected into the store, and its ranks
        # compared (dynprof-train-sim marks its steps in its trace).
        def collected():
            code, body = c.http("GET", "/v1/jobs/%s/windows/%d/traces" %
                                (JOB, done["id"]))
            return body if code == 200 and \
                body["counts"]["collected"] == 4 else None
        idx = wait_for(collected, 60, "window %d collected" % done["id"])
        seen = scene(c, modules, "traces", dict(facts, done=done["id"],
                                                traces=idx["traces"]))
        check(seen["compared"].startswith("4 ranks with steps"),
              "the comparison: %s" % seen)
        # The straggler's line says what the API says.
        code, cmp = c.http("GET", "/v1/jobs/%s/windows/%d/compare" %
                           (JOB, done["id"]))
        st = cmp["straggler"] if code == 200 else None
        check(seen["straggler"] == ("Straggler: %s (%s)" % (
            st["says"], st["why"]) if st else "No straggler stands out" +
            (" (step times agree)" if cmp["synchronous"] else "")),
              "the straggler's line: %s, the API's %s" % (seen, st))

        # The viewer: the API's reason, asked the way the page asks.
        c.token = tokens["viewer"]
        code, body = c.http("DELETE", "/v1/jobs/%s/windows/0" % JOB)
        check(code == 403, "a viewer's cancel: %s %s" % (code, body))
        c.token = tokens["operator"]
        live = c.add_window(JOB, {"start_step": FAR, "stop_step": FAR + 9})
        gen = c.status(JOB)["generation"]
        scene(c, modules, "viewer", dict(facts, reason=body["error"],
                                         live=live["id"]))
        st = c.status(JOB)
        check(st["generation"] == gen and window(c, live["id"])["state"] ==
              "scheduled" and not [x for x in st["windows"]
                                   if x["start_step"] == FAR + 100],
              "the viewer changed something: generation %s, %s" % (
                  st["generation"], st["windows"]))

        # A time window naming its ranks by node (the page shows what
        # named them, and when it runs instead of a bar of steps).
        tw = c.add_window(JOB, {"at": "+600s", "duration_ms": 5000,
                                "nodes": "a"})
        scene(c, modules, "timewin", dict(facts, timewin=tw["id"],
                                          at=tw["at"], ranks="ranks 0-1"))
        check(c.http("DELETE", "/v1/jobs/%s/windows/%d" % (
            JOB, tw["id"]))[0] == 200, "cancelling the time window")

        c.coord.stop()
        c.start_coordinator(heartbeat_ms=500, extra=flags)
        c.wait_ranks(JOB, 4, min_step=5)
        scene(c, modules, "restart", dict(facts, done=done["id"],
                                          cancelled=cancelled))

        rc = nodes[1].agent.stop()
        check(rc == 0, "agent b exited %s on SIGTERM" % rc)
        wait_for(lambda: [n for n in c.http("GET", "/v1/nodes")[1]["nodes"]
                          if n["node"] == "b" and n["state"] == "left"], 10,
                 "node b left")
        scene(c, modules, "left", dict(facts, node="b", nnodes=2))


if __name__ == "__main__":
    main(test)
