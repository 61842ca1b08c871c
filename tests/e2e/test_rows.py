#!/usr/bin/python3
"""Stored rows are checked on load, with the rules the API is held to: bad
rows written straight into the store (a real SQLite file with sqlite3, or a
real etcd through its JSON gateway, tests/support/etcd.py), then the real
coordinator started on it.  One scenario per run, named by the first
argument: sqlite, etcd.

Written into the store of a job whose generation is 3 (two windows posted,
one cancelled): the generation counter's row unreadable (etcd: not a JSON
object; SQLite: text), then lower than the job's; windows [-100, 2^62] with
ranks "0-99999999999,x" and output_subdir "../../../etc", [2^63-1, -5], and
one row per broken rule (ranks, output_subdir, state, options, a time
window's times, steps or tolerance, a value of the wrong type, a key its
fields do not name, a refused window's reason over its bound, the
generation that made or ended a window past the counter's bound or
negative (SQLite));
a rank whose error is 10,000
bytes and one whose step is 2^63-1; over SQLite, rank events of the
collections: one whose detail does not read as "SIZE SHA256 WHERE", one whose
reason is 100,000 bytes (beside a good one).  After each restart: none of them is
served (no window's counts nor traces index has them), each is counted in dynprof_store_rows_quarantined, a new window
[100, 110] is accepted (201, not 409) with an id none of them has, and the
next change's generation is above 3, never below what agents applied.
"""

import base64
import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402
import etcd  # noqa: E402

JOB = "rows"
BIG = 2 ** 62
I64 = 2 ** 63 - 1

# (id, start, stop, ranks, output_subdir, state, options, selector, times):
# each breaks a rule.  times: a time window's (start_unix_ns, stop_unix_ns,
# tolerance_ms), or None.
T0 = 1796472000 * 10 ** 9
BAD_WINDOWS = [
    (7, -100, BIG, "0-99999999999,x", "../../../etc", 1, None, None, None),
    (8, I64, -5, "", "", 1, None, None, None),
    (9, 200, 210, "0-99999999999,x", "", 1, None, None, None),
    (10, 300, 310, "", "../../../etc", 1, None, None, None),
    (11, 400, 410, "", "", 7, None, None, None),
    (12, 500, 510, "", "", 1, "{not json", None, None),
    # What named the ranks: a selector that does not parse, one with no
    # rank list, one with a field nobody knows.
    (13, 800, 810, "0-3", "", 1, None, "select=PP>3;x\n", None),
    (14, 900, 910, "", "", 1, None, "one_per=pp\n", None),
    (15, 1000, 1010, "0", "", 1, None, "every=1\n", None),
    # Time windows: stop before start, steps besides times, a tolerance
    # out of range, a time past 2116.
    (16, 0, 0, "", "", 1, None, None, (T0 + 10 ** 9, T0, 100)),
    (17, 5, 6, "", "", 1, None, None, (T0, T0 + 10 ** 9, 100)),
    (18, 0, 0, "", "", 1, None, None, (T0, T0 + 10 ** 9, 10 ** 9)),
    (19, 0, 0, "", "", 1, None, None, (T0, I64, 100)),
]


def metric(c, name):
    import urllib.request
    with urllib.request.urlopen(c.url() + "/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    return None


def quarantined(c, table):
    return metric(c, 'dynprof_store_rows_quarantined{table="%s"}' % table)


def leader(c):
    code, body = c.http("GET", "/healthz", timeout=5)
    return code == 200 and body.get("role") in (None, "leader", "standalone")


def schedule(c):
    """Job JOB at generation 3: windows 1 and 2 posted, 2 cancelled."""
    for body in ({"start_step": 10, "stop_step": 20},
                 {"start_step": 30, "stop_step": 40}):
        code, r = c.http("POST", "/v1/jobs/%s/windows" % JOB, body)
        check(code == 201, "POST window: %s %s" % (code, r))
    code, r = c.http("DELETE", "/v1/jobs/%s/windows/2" % JOB)
    check(code == 200 and r["generation"] == 3, "cancel: %s %s" % (code, r))


CREATED = [1, 2]       # the windows the API made


def check_served(c, counts, gen_floor, new_start):
    """Only the windows the API made served, counts quarantined, a new window
    taken at a generation above gen_floor with an id none of the bad rows
    has."""
    code, job = c.http("GET", "/v1/jobs/%s" % JOB)
    check(code == 200, "GET job: %s %s" % (code, job))
    ids = sorted(w["id"] for w in job["windows"])
    check(ids == CREATED, "windows served: %s" % job["windows"])
    for w in job["windows"]:
        check(w["start_step"] >= 0 and w["stop_step"] <= 10 ** 15 and
              ".." not in w["output_subdir"],
              "a bad window served: %s" % w)
    log("served windows %s, generation %d" % (ids, job["generation"]))
    # Of the stored collections, rank 3's of window 1 alone reads.
    if counts.get("events"):
        w1 = [w for w in job["windows"] if w["id"] == 1][0]
        w2 = [w for w in job["windows"] if w["id"] == 2][0]
        check(w1["rank_counts"]["collected"] == 1 and
              w2["rank_counts"]["collect_failed"] == 0,
              "collections counted: %s, %s" % (w1["rank_counts"],
                                               w2["rank_counts"]))
        for wid, want in ((1, [3]), (2, [])):
            code, t = c.http("GET", "/v1/jobs/%s/windows/%d/traces" % (JOB,
                                                                        wid))
            check(code == 200 and [e["rank"] for e in t["traces"]] == want,
                  "window %d's traces: %s %s" % (wid, code, t))
    for table, n in counts.items():
        got = quarantined(c, table)
        check(got == n, "quarantined %s rows: %s, not %d" % (table, got, n))
    code, ranks = c.http("GET", "/v1/jobs/%s/ranks" % JOB)
    check(code == 200 and [r["rank"] for r in ranks["ranks"]] == [0, 3],
          "ranks served: %s" % ranks)
    # Rank 3's stored labels do not pass: it is served without them.
    check(all(r["labels"] == {} for r in ranks["ranks"]) and
          metric(c, "dynprof_labels_refused_total") == 1,
          "labels: %s, refused %s" % ([r["labels"] for r in ranks["ranks"]],
                                      metric(c, "dynprof_labels_refused_total")))
    code, r = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                     {"start_step": new_start, "stop_step": new_start + 10})
    check(code == 201, "a new window refused: %s %s" % (code, r))
    check(r["generation"] > gen_floor, "generation went back: %d after %d" %
          (r["generation"], gen_floor))
    check(r["id"] > max(w[0] for w in BAD_WINDOWS),
          "window id %d handed out again" % r["id"])
    CREATED.append(r["id"])
    log("new window %d at generation %d (stored job: %d)" % (
        r["id"], r["generation"], gen_floor))
    return r["generation"]


def stop(c):
    c.coord.stop(timeout=10)
    c.procs.remove(c.coord)


def start(c, extra=()):
    c.start_coordinator(extra=extra)
    wait_for(lambda: leader(c), 20, "the coordinator leading")


def two_loads(c, extra, nwindows, meta_low, nevents=0):
    """Starts the coordinator on the store with its bad rows (the counter's
    row unreadable), checks; stops it, makes the counter's row lower than
    the job's (meta_low()), starts it again, checks."""
    start(c, extra)
    gen = check_served(c, {"meta": 1, "windows": nwindows, "ranks": 2,
                           "events": nevents}, 3, 100)
    check(gen == 4, "generation %d, not 4 (the job's 3, plus one)" % gen)
    stop(c)
    meta_low()
    start(c, extra)
    gen = check_served(c, {"meta": 0, "windows": nwindows, "ranks": 2,
                           "events": nevents}, 4, 120)
    check(gen == 5, "generation %d, not 5" % gen)


# --- SQLite ---------------------------------------------------------------

def scenario_sqlite():
    with Cluster("rows-sqlite") as c:
        start(c)
        schedule(c)
        stop(c)
        db = sqlite3.connect(os.path.join(c.state, "dynprof.db"))
        db.execute("UPDATE meta SET value = 'x' WHERE key = 'generation'")
        for (wid, a, b, ranks, sub, state, opts, sel, tm) in BAD_WINDOWS:
            db.execute("INSERT INTO windows VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
                       " 0, 0, 0, ?, 0, ?, ?, ?, NULL, NULL, 0, 0)", (JOB, wid, a, b,
                                                          ranks,
                                                   opts, sub, state, sel) +
                       (tm or (0, 0, 0)))
        # A job's own trace store that breaks its rule (schema 8).
        db.execute("INSERT INTO windows VALUES (?, 20, 1100, 1110, '', NULL,"
                   " '', 1, 0, 0, 0, NULL, 0, 0, 0, 0, '/store/../etc', NULL, 0, 0)",
                   (JOB,))
        # Why the nodes refused it (schema 9): past its bound.
        db.execute("INSERT INTO windows VALUES (?, 21, 1200, 1210, '', NULL,"
                   " '', 1, 1, 0, 0, NULL, 0, 0, 0, 0, NULL, ?, 0, 0)",
                   (JOB, "r" * 600))
        # The generations that made and ended it (schema 10): past the
        # counter's bound, and negative.
        db.execute("INSERT INTO windows VALUES (?, 22, 1300, 1310, '', NULL,"
                   " '', 1, 1, 0, 0, NULL, 0, 0, 0, 0, NULL, NULL, ?, 0)",
                   (JOB, 2 ** 53 + 1))
        db.execute("INSERT INTO windows VALUES (?, 23, 1400, 1410, '', NULL,"
                   " '', 1, 1, 0, 0, NULL, 0, 0, 0, 0, NULL, NULL, 2, -1)",
                   (JOB,))
        # A value of the wrong type: the id as text, a step as a real.
        db.execute("INSERT INTO windows VALUES (?, 'abc', 600, 610, '', NULL,"
                   " '', 1, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, NULL, 0, 0)", (JOB,))
        db.execute("INSERT INTO windows VALUES (?, 6, 700.5, 710, '', NULL,"
                   " '', 1, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, NULL, 0, 0)", (JOB,))
        db.execute("INSERT INTO ranks VALUES (?, 0, 'n0', 10, 5, 1, 0, NULL,"
                   " 1, 0, NULL, 0, 0, NULL)", (JOB,))
        db.execute("INSERT INTO ranks VALUES (?, 1, 'n0', 11, 5, 6, 1, NULL,"
                   " 5, 0, ?, 0, 0, NULL)", (JOB, "e" * 10000))
        db.execute("INSERT INTO ranks VALUES (?, 2, 'n0', 12, ?, 1, 0, NULL,"
                   " 1, 0, NULL, 0, 0, NULL)", (JOB, I64))
        # Labels that do not pass: the rank loads, without them.
        db.execute("INSERT INTO ranks VALUES (?, 3, 'n0', 13, 5, 1, 0, NULL,"
                   " 1, 0, NULL, 0, 0, ?)", (JOB, 'PP=3;"x' + "y" * 5000))
        # Collections (kind 9 collected, 10 collect_failed): rank 3's of
        # window 1 reads; rank 0's does not, nor does its reason of window
        # 2, 100,000 bytes.
        db.execute("INSERT INTO events VALUES (?, 3, 1, 9, 20, 1000, 'n0',"
                   " ?)", (JOB, "100 %s /store/rows/window-1/rank-3.tar.zst"
                           % ("ab" * 32)))
        db.execute("INSERT INTO events VALUES (?, 0, 1, 9, 20, 1000, 'n0',"
                   " 'garbage')", (JOB,))
        db.execute("INSERT INTO events VALUES (?, 0, 2, 10, 40, 1000, 'n0',"
                   " ?)", (JOB, "r" * 100000))
        db.commit()
        db.close()

        def meta_low():
            db = sqlite3.connect(os.path.join(c.state, "dynprof.db"))
            db.execute("UPDATE meta SET value = 1 WHERE key = 'generation'")
            db.commit()
            db.close()
        two_loads(c, (), len(BAD_WINDOWS) + 6, meta_low, 2)
    return 0


# --- etcd -----------------------------------------------------------------

def b64(s):
    return base64.b64encode(s.encode()).decode()


def etcd_put(cl, key, value):
    import urllib.request
    ep = cl.endpoints.split(",")[0]
    req = urllib.request.Request(
        ep + "/v3/kv/put", data=json.dumps({"key": b64(key),
                                            "value": b64(value)}).encode(),
        method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        check(r.status == 200, "etcd put %s: %s" % (key, r.status))


def window_row(wid, a, b, ranks, sub, state, opts, sel=None, tm=None):
    row = {"job": JOB, "id": wid, "start_step": a, "stop_step": b,
           "ranks": ranks, "output_subdir": sub, "state": state,
           "finished": 0, "created_ns": 0, "ended_ns": 0}
    if opts is not None:
        row["options"] = opts
    if sel is not None:
        row["selector"] = sel
    if tm is not None:
        (row["start_unix_ns"], row["stop_unix_ns"],
         row["tolerance_ms"]) = tm
    return json.dumps(row)


def scenario_etcd():
    with Cluster("rows-etcd") as c:
        got = etcd.for_cluster(c, "rows")
        if got is None:
            return 1
        cl, extra = got
        prefix = extra[extra.index("--etcd-prefix") + 1]
        start(c, extra)
        schedule(c)
        stop(c)
        etcd_put(cl, prefix + "meta/generation", "[1]")
        for w in BAD_WINDOWS:
            etcd_put(cl, prefix + "windows/%s/%010u" % (JOB, w[0]),
                     window_row(*w))
        # A value of the wrong type, a key its fields do not name, a value
        # that is no JSON at all.
        etcd_put(cl, prefix + "windows/%s/%010u" % (JOB, 3),
                 window_row(3, "600", 610, "", "", 1, None))
        etcd_put(cl, prefix + "windows/%s/%010u" % (JOB, 5),
                 window_row(6, 600, 610, "", "", 1, None))
        etcd_put(cl, prefix + "windows/%s/%010u" % (JOB, 4), "\"x\"")
        # Why the nodes refused it: past its bound.
        row = json.loads(window_row(21, 1200, 1210, "", "", 1, None))
        row.update(finished=1, refused_reason="r" * 600)
        etcd_put(cl, prefix + "windows/%s/%010u" % (JOB, 21),
                 json.dumps(row))
        rank = {"job": JOB, "rank": 0, "node": "n0", "pid": 10, "step": 5,
                "state": 1, "window_id": 0, "last_event": 1}
        etcd_put(cl, prefix + "ranks/%s/%010d" % (JOB, 0), json.dumps(rank))
        rank.update(rank=1, state=6, last_event=5, error="e" * 10000)
        etcd_put(cl, prefix + "ranks/%s/%010d" % (JOB, 1), json.dumps(rank))
        rank.update(rank=2, state=1, last_event=1, step=I64)
        del rank["error"]
        etcd_put(cl, prefix + "ranks/%s/%010d" % (JOB, 2), json.dumps(rank))
        rank.update(rank=3, step=5, labels='PP=3;"x' + "y" * 5000)
        etcd_put(cl, prefix + "ranks/%s/%010d" % (JOB, 3), json.dumps(rank))
        two_loads(c, extra, len(BAD_WINDOWS) + 4, lambda: etcd_put(
            cl, prefix + "meta/generation",
            json.dumps({"generation": 1, "schema": 1})))
    return 0


SCENARIOS = {"sqlite": scenario_sqlite, "etcd": scenario_etcd}


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.stderr.write("usage: test_rows.py %s\n" % "|".join(SCENARIOS))
        sys.exit(2)
    main(SCENARIOS[sys.argv[1]])
