#!/usr/bin/python3
"""A follower's event stream against the leader's: two coordinators over one
etcd member on loopback (tests/support/etcd.py), dynprof-loadgen's AGENTS
agents x RANKS ranks sending their events to the leader, one client following
the job's stream on the leader and one on the follower (server/replica.c).

Staleness: for each event, how much later the follower's client had it than
the leader's (median, p99, max).  Read latency: a GET of the last 100 events
(/v1/jobs/J/events?since=R, not followed) from each, READS times once the
store holds everything.  And the follower's own figures (/metrics): loads,
the longest read-and-load of the whole prefix, the longest lag from a change
its watch told of to the load that took it.

Then the other reads a follower serves (docs/design.md): the read latency of
GET /v1/jobs, /v1/nodes, a page of 1,000 ranks, the job's summary, its
stragglers, its nodes (the page's heat map) and the page itself on each, the
two asked in turn (paired), READS times each; and the staleness of a change: a window
POSTed to the leader, from its 201 (committed) to the follower's /v1/jobs
counting it, CHANGES times (median and spread: min-max).

    python3 bench/replica.py BUILD_DIR [AGENTS] [RANKS] [READS] [CHANGES]
        (default 200 agents x 10 ranks, 20 events each, 200 reads, 10
        changes)
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
os.environ["DYNPROF_BUILD_DIR"] = BUILD
AGENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
RANKS = int(sys.argv[3]) if len(sys.argv) > 3 else 10
READS = int(sys.argv[4]) if len(sys.argv) > 4 else 200
CHANGES = int(sys.argv[5]) if len(sys.argv) > 5 else 10
JOB = "loadgen"

import test_etcd  # noqa: E402
from cluster import wait_for  # noqa: E402


class Follow(threading.Thread):
    """Follows JOB's stream on one coordinator: each event's arrival."""

    def __init__(self, port, since):
        threading.Thread.__init__(self, daemon=True)
        self.port, self.since = port, since
        self.seen = {}
        self.stop = False

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", "/v1/jobs/%s/events?since=%d&follow=1" % (
            JOB, self.since))
        r = conn.getresponse()
        if r.status != 200:
            raise SystemExit("follow %d: HTTP %d" % (self.port, r.status))
        while not self.stop:
            line = r.readline()
            if not line:
                return
            ev = json.loads(line)
            if "rev" in ev:
                self.seen[ev["rev"]] = time.monotonic()


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, r.getheader("X-Dynprof-Revision"), body


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def metric(port, name):
    _, _, body = get(port, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main():
    with test_etcd.HaCluster("replica-bench") as c:
        # The coordinator's default heartbeat (the tests' 500 ms is too
        # short for one loadgen process to keep 10,000 agents alive).
        lead = c.start_coordinators(2, ttl=5, heartbeat_ms=2000)
        fol = 1 - lead
        lport, fport = c.coords[lead][2], c.coords[fol][2]
        # The job exists once the first agent subscribes: a window first.
        c.use(lead)
        code, w = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                         {"start_step": 1000000, "stop_step": 1000001})
        assert code == 201, (code, w)
        # The event stream's revision (X-Dynprof-Revision is etcd's).
        _, _, body = get(lport, "/v1/jobs/%s" % JOB)
        since = json.loads(body)["revision"]
        wait_for(lambda: get(fport, "/v1/jobs/%s/events?since=%d" % (
            JOB, since))[0] == 200, 20, "the follower's copy")
        fl, ff = Follow(lport, since), Follow(fport, since)
        fl.start()
        ff.start()
        t0 = time.monotonic()
        lg = subprocess.run([
            os.path.join(BUILD, "bench", "dynprof-loadgen"),
            "--coordinator", "127.0.0.1:%d" % c.coords[lead][1],
            "--http", "127.0.0.1:%d" % lport, "--agents", str(AGENTS),
            "--ranks", str(RANKS), "--events", "20", "--mode", "events",
            "--job", JOB], stdout=subprocess.PIPE, universal_newlines=True,
            timeout=600)
        if lg.returncode != 0:
            raise SystemExit("loadgen: %s" % lg.stdout[-2000:])
        took = time.monotonic() - t0
        # Every event (20 an agent, and the window) on both: a follower
        # may be ahead of the leader's client.
        want = 20 * AGENTS + 1
        wait_for(lambda: len(fl.seen) >= want and
                 set(list(fl.seen)) <= set(list(ff.seen)), 120,
                 "both streams have every event")
        fl.stop = ff.stop = True
        lag = [(ff.seen[r] - fl.seen[r]) * 1000 for r in fl.seen]
        print("events: %d in %.2f s (loadgen: %d agents x %d ranks)" % (
            len(fl.seen), took, AGENTS, RANKS))
        print("staleness (follower's stream after the leader's), ms: "
              "median %.1f p99 %.1f max %.1f" % (
                  statistics.median(lag), pct(lag, 99), max(lag)))
        last = max(fl.seen)
        path = "/v1/jobs/%s/events?since=%d" % (JOB, last - 100)
        for name, port in (("leader", lport), ("follower", fport)):
            ts = []
            for _ in range(READS):
                t = time.monotonic()
                code, _, _ = get(port, path)
                ts.append((time.monotonic() - t) * 1000)
                assert code == 200, code
            print("read latency %-8s (GET the last 100 events), ms: median "
                  "%.2f p99 %.2f" % (name, statistics.median(ts),
                                     pct(ts, 99)))
        print("follower: %d loads, longest read and load %.3f s, longest "
              "lag %.3f s" % (metric(fport, "dynprof_replica_loads_total"),
                              metric(fport,
                                     "dynprof_replica_load_seconds_max"),
                              metric(fport,
                                     "dynprof_replica_lag_seconds_max")))
        reads = ["/v1/jobs", "/v1/nodes",
                 "/v1/jobs/%s/ranks?limit=1000" % JOB,
                 "/v1/jobs/%s" % JOB, "/v1/jobs/%s/stragglers" % JOB,
                 "/v1/jobs/%s/nodes" % JOB, "/ui/"]
        for path in reads:
            ts = {lport: [], fport: []}
            for _ in range(READS):
                for port in (lport, fport):
                    t = time.monotonic()
                    code, _, _ = get(port, path)
                    ts[port].append((time.monotonic() - t) * 1000)
                    assert code == 200, (port, path, code)
            for name, port in (("leader", lport), ("follower", fport)):
                print("read latency %-8s GET %s, ms: median %.2f min %.2f "
                      "p99 %.2f max %.2f" % (
                          name, path, statistics.median(ts[port]),
                          min(ts[port]), pct(ts[port], 99), max(ts[port])))
        stale = []
        for i in range(CHANGES):
            _, _, body = get(lport, "/v1/jobs")
            n0 = json.loads(body)["jobs"][0]["windows"]
            c.use(lead)
            code, w = c.http("POST", "/v1/jobs/%s/windows" % JOB, {
                "start_step": 2000000 + 10 * i,
                "stop_step": 2000001 + 10 * i})
            assert code == 201, (code, w)
            t = time.monotonic()

            def counted():
                code, _, body = get(fport, "/v1/jobs")
                return code == 200 and \
                    json.loads(body)["jobs"][0]["windows"] > n0
            wait_for(counted, 60, "the follower's /v1/jobs counts window %d"
                     % w["id"], interval=0.005)
            stale.append((time.monotonic() - t) * 1000)
        print("staleness of a change (a window's 201 on the leader to the "
              "follower's /v1/jobs counting it), ms: median %.0f min %.0f "
              "max %.0f (%d changes)" % (statistics.median(stale),
                                          min(stale), max(stale), CHANGES))
        print("RESULT events=%d staleness_median_ms=%.1f staleness_p99_ms=%.1f"
              " staleness_max_ms=%.1f" % (len(fl.seen),
                                          statistics.median(lag),
                                          pct(lag, 99), max(lag)))


if __name__ == "__main__":
    main()
