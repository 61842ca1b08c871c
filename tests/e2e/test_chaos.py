#!/usr/bin/python3
"""Chaos: a coordinator, 3 agents and 9 ranks (rank 8 in Python) run 24 short
windows one after another while a seeded random schedule SIGKILLs and restarts
agents and the coordinator and SIGSTOPs/SIGCONTs an agent at random instants.

At the end the ranks' own records (their logs and trace files) and the
coordinator's status (GET /v1/jobs/J) must agree, window by window, rank by
rank: a rank that ran a window (its trace is complete, its log says started and
stopped once) has exactly one started event at the window's start step and one
stopped event at its stop step; a rank that never started it has one skipped
event and neither of the others.  No window is left running.  No process
grows: for each coordinator and agent process sampled over GROWTH_SPAN_S or
more (from WARMUP_S after its start; the last node's agent is never killed,
so one agent lives the whole run), RSS grows by at most RSS_SLACK_KB and open
descriptors by at most FD_SLACK between its first and last samples.

The seed is printed; DYNPROF_CHAOS_SEED sets it.  bench/chaos.py runs the
same (run_chaos()) longer, with a seed and a duration.
"""

import http.client
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, Failure, compact, events_of, log, main,  # noqa: E402
                     wait_for)

NODES = 3
PER_NODE = 3
PY_RANK = 8                     # one rank over the Python binding
RATE = 50                       # steps per second
LEAD_MIN = 100                  # steps between posting a window and its start
LEAD_MAX = 160                  # post no further ahead than this
SPACING = 25                    # steps between two windows
# ASan's quarantine and shadow memory grow with every allocation for a while:
# not a leak (LeakSanitizer checks that at exit), so a looser bound there, and
# the quarantine (256 MB by default: a coordinator busy with replays filled 66
# MB of it in 14 s) kept small in the daemons this test starts.
RSS_SLACK_KB = (64 if os.environ.get("DYNPROF_SANITIZED") else 8) * 1024
if os.environ.get("DYNPROF_SANITIZED"):
    os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [
        os.environ.get("ASAN_OPTIONS", ""), "quarantine_size_mb=8",
        "thread_local_quarantine_size_kb=256"]))
FD_SLACK = 2
WARMUP_S = 2.5
GROWTH_SPAN_S = 4
SETTLE_S = 1.5                  # after the last window, for late replays
WINDOWS = 24                    # the status keeps 64 events per rank
# What a request to a coordinator killed before or while it answers raises.
DOWN = (OSError, ValueError, http.client.HTTPException)


def parse_ranks(spec, universe):
    """The ranks of a window's target list ("" is every rank) in universe."""
    if not spec:
        return set(universe)
    out = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out & set(universe)


def proc_sample(pid):
    """(rss_kb, open fds) of a live process, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            rss = [int(line.split()[1]) for line in f
                   if line.startswith("VmRSS:")]
        nfd = len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, ValueError):
        return None
    return (rss[0] if rss else 0), nfd


class Chaos:
    """The fault schedule, drawn from the seed, run in a thread."""

    def __init__(self, cluster, nodes, rng, stop_at):
        self.c = cluster
        self.nodes = nodes
        self.rng = rng
        self.stop_at = stop_at
        self.kills = 0
        self.stops = 0
        self.error = None
        self.done = threading.Event()
        self.samples = {}       # (name, pid) -> [(t, rss_kb, nfd)]
        self.lock = threading.Lock()

    def sample(self):
        procs = [("coordinator", self.c.coord)] + [
            ("agent-" + n.name, n.agent) for n in self.nodes]
        now = time.monotonic()
        for name, p in procs:
            if p is None or not p.alive():
                continue
            s = proc_sample(p.pid)
            if s is not None:
                with self.lock:
                    self.samples.setdefault((name, p.pid), []).append(
                        (now, s[0], s[1]))

    def sleep(self, s):
        end = time.monotonic() + s
        while time.monotonic() < end:
            self.sample()
            time.sleep(min(0.25, max(0.0, end - time.monotonic())))

    def one(self):
        r = self.rng.random()
        down = self.rng.uniform(0.0, 0.6)
        if r < 0.45:
            # The last node's agent is never killed: it lives the whole run,
            # so its samples show whether an agent grows.
            n = self.rng.choice(self.nodes[:-1])
            log("chaos: SIGKILL agent %s (pid %d), down %.2fs" % (
                n.name, n.agent.pid, down))
            n.agent.kill9()
            self.kills += 1
            self.sleep(down)
            n.start_agent()
        elif r < 0.7:
            log("chaos: SIGKILL the coordinator (pid %d), down %.2fs" % (
                self.c.coord.pid, down))
            self.c.coord.kill9()
            self.kills += 1
            self.sleep(down)
            self.c.start_coordinator()
        else:
            n = self.rng.choice(self.nodes)
            held = self.rng.uniform(0.3, 1.5)
            log("chaos: SIGSTOP agent %s (pid %d) for %.2fs" % (
                n.name, n.agent.pid, held))
            n.agent.signal(signal.SIGSTOP)
            self.stops += 1
            try:
                self.sleep(held)
            finally:
                n.agent.signal(signal.SIGCONT)

    def run(self):
        try:
            while time.monotonic() < self.stop_at:
                self.sleep(self.rng.uniform(0.3, 2.0))
                if time.monotonic() >= self.stop_at:
                    break
                self.one()
        except Exception as e:  # reported by the main thread
            self.error = e
        finally:
            self.done.set()


def post_windows(c, job, nwin, rng, universe, deadline, keep_going):
    """Posts nwin windows one after another, each LEAD_MIN..LEAD_MAX steps
    ahead of the job's furthest rank; rides out a coordinator that is down.
    Returns the number of windows the coordinator accepted."""
    posted, next_start = 0, None
    subsets = ["", "", "0-%d" % (len(universe) // 2 - 1),
               "%d-%d" % (len(universe) // 2, len(universe) - 1), "1,4,%d" % PY_RANK]
    while posted < nwin:
        if time.monotonic() > deadline:
            raise Failure("only %d of %d windows posted in time" % (posted, nwin))
        keep_going()
        time.sleep(0.05)
        try:
            code, st = c.http("GET", "/v1/jobs/%s" % job, timeout=2)
        except DOWN:
            continue
        if code != 200:
            continue
        top = (st.get("progress") or {}).get("max_step", -1)
        if top is None or top < 0:
            continue
        if next_start is None:
            next_start = top + LEAD_MIN
        if next_start - top > LEAD_MAX:
            continue
        start = max(next_start, top + LEAD_MIN)
        stop = start + rng.randint(2, 5)
        body = {"start_step": start, "stop_step": stop,
                "ranks": rng.choice(subsets)}
        try:
            code, w = c.http("POST", "/v1/jobs/%s/windows" % job, body,
                             timeout=2)
        except DOWN:
            code = None
        if code == 201:
            posted += 1
            log("window %d: steps %d-%d ranks '%s'" % (
                w["id"], start, stop, body["ranks"]))
        # Down, or refused as overlapping one whose answer was lost: move on.
        next_start = stop + 1 + SPACING


def rank_log_counts(node, rank):
    """{(kind, window): count} from the rank's own log."""
    out = {}
    for line in node.ranks[rank].output().splitlines():
        parts = line.split()
        # "rank N: started window W (steps a-b) -> dir"
        # "rank N: stopped window W (reason, n steps traced)"
        if len(parts) >= 5 and parts[0] == "rank" and \
                parts[2] in ("started", "stopped") and parts[3] == "window":
            key = (parts[2], int(parts[4]))
            out[key] = out.get(key, 0) + 1
    return out


def verify(c, job, where, universe):
    """Compares the ranks' records with the status; returns (figures,
    problems)."""
    st = c.status(job)
    ranks = {r["rank"]: r for r in st.get("ranks", [])}
    logs = {rk: rank_log_counts(where[rk], rk) for rk in universe}
    fig = {"windows": 0, "rank_events": 0, "lost": 0, "duplicated": 0,
           "skipped": 0, "running": 0}
    problems = []
    for w in st.get("windows", []):
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        fig["windows"] += 1
        if w.get("state") in ("running", "scheduled"):
            fig["running"] += 1
            problems.append("window %d (%d-%d) left %s" % (
                wid, a, b, w.get("state")))
        for rk in sorted(parse_ranks(w.get("ranks", ""), universe)):
            r = ranks.get(rk, {})
            started = events_of(r, "started", wid)
            stopped = events_of(r, "stopped", wid)
            skipped = events_of(r, "skipped", wid)
            ls, lt = logs[rk].get(("started", wid), 0), \
                logs[rk].get(("stopped", wid), 0)
            tr = where[rk].trace(rk, a, b)
            ran = tr is not None and tr.get("window") == wid
            if ran:
                fig["rank_events"] += 2
                if tr.get("steps") != list(range(a, b + 1)) or ls != 1 or \
                        lt != 1:
                    problems.append(
                        "rank %d window %d: trace steps %s, log says started "
                        "%d stopped %d times (want %d-%d, once each)" % (
                            rk, wid, compact(tr.get("steps") or []), ls, lt, a, b))
                for kind, evs, step in (("started", started, a),
                                        ("stopped", stopped, b)):
                    if len(evs) == 0:
                        fig["lost"] += 1
                        problems.append("rank %d window %d: %s event lost "
                                        "(the rank ran it)" % (rk, wid, kind))
                    elif len(evs) > 1:
                        fig["duplicated"] += len(evs) - 1
                        problems.append("rank %d window %d: %d %s events" % (
                            rk, wid, len(evs), kind))
                    elif evs[0].get("step") != step:
                        problems.append("rank %d window %d: %s at step %s, "
                                        "window %d-%d" % (rk, wid, kind,
                                                          evs[0].get("step"), a, b))
                if skipped:
                    problems.append("rank %d window %d: ran it and skipped it"
                                    % (rk, wid))
            else:
                fig["skipped"] += 1
                if ls or lt or started or stopped:
                    problems.append(
                        "rank %d window %d: no complete trace, but the log says "
                        "started %d stopped %d, the status %d started %d "
                        "stopped" % (rk, wid, ls, lt, len(started), len(stopped)))
                if len(skipped) == 0:
                    fig["lost"] += 1
                    problems.append("rank %d window %d: never started it and no "
                                    "skipped event" % (rk, wid))
                elif len(skipped) > 1:
                    fig["duplicated"] += len(skipped) - 1
                    problems.append("rank %d window %d: %d skipped events" % (
                        rk, wid, len(skipped)))
    for rk, r in ranks.items():
        if len(r.get("events", [])) >= 64:
            problems.append("rank %d: %d events, the status keeps no more: "
                            "fewer windows" % (rk, len(r["events"])))
    return fig, problems


def growth(chaos):
    """Problems with the RSS and descriptors of the processes sampled over
    at least GROWTH_SPAN_S, from WARMUP_S after their first sample (agents
    reconnect to a restarted coordinator, SQLite opens its journal)."""
    problems, notes = [], []
    for (name, pid), s in sorted(chaos.samples.items()):
        s = [x for x in s if x[0] >= s[0][0] + WARMUP_S]
        if len(s) < 2 or s[-1][0] - s[0][0] < GROWTH_SPAN_S:
            continue
        drss, dfd = s[-1][1] - s[0][1], s[-1][2] - s[0][2]
        notes.append("%s[%d] %.0fs: rss %+d KB, fds %+d" % (
            name, pid, s[-1][0] - s[0][0], drss, dfd))
        if drss > RSS_SLACK_KB or dfd > FD_SLACK:
            problems.append("%s (pid %d) grew over %.0f s: rss %d -> %d KB, "
                            "fds %d -> %d" % (name, pid, s[-1][0] - s[0][0],
                                              s[0][1], s[-1][1], s[0][2], s[-1][2]))
    return problems, notes


def run_chaos(seed, nwin, chaos_s=None, name="chaos"):
    """One run on a new cluster: nwin windows, faults for chaos_s seconds
    (default: about as long as the windows take).  Returns the figures, with
    "problems" the list of disagreements; raises Failure if the run itself
    could not go on."""
    job = "chaos-%d" % os.getpid()
    rng = random.Random(seed)
    universe = list(range(NODES * PER_NODE))
    if chaos_s is None:
        # Roughly how long nwin windows take to go by.
        chaos_s = nwin * (SPACING + 5) / RATE + LEAD_MIN / RATE
    log("chaos seed %d: %d windows, faults for %.0f s" % (seed, nwin, chaos_s))
    with Cluster(name) as c:
        c.start_coordinator()
        nodes, where = c.start_grid(job, NODES, PER_NODE, rate=RATE,
                                    python=(PY_RANK,))
        c.wait_ranks(job, len(universe), min_step=5)
        chaos = Chaos(c, nodes, random.Random(rng.random()),
                      time.monotonic() + chaos_s)
        chaos.sample()
        t = threading.Thread(target=chaos.run, daemon=True)
        t.start()

        def keep_going():
            c.check_ranks_running()
            if chaos.error is not None:
                raise Failure("chaos schedule: %s" % chaos.error)
        try:
            post_windows(c, job, nwin, random.Random(rng.random()), universe,
                         time.monotonic() + chaos_s + 120, keep_going)
        finally:
            chaos.stop_at = 0
            chaos.done.wait(60)
        if chaos.error is not None:
            raise Failure("chaos schedule: %s" % chaos.error)
        # Everyone is up again: let every window go by and end.
        for n in nodes:
            if not n.agent.alive():
                n.start_agent()

        def over():
            chaos.sample()
            keep_going()
            st = c.status(job)
            top = (st.get("progress") or {}).get("min_step", -1)
            ws = st.get("windows", [])
            return ws and top is not None and \
                top > max(w["stop_step"] for w in ws) + 2 and \
                all(w.get("state") not in ("running", "scheduled") for w in ws)
        try:
            wait_for(over, 30 + LEAD_MAX / RATE, "every window over",
                     interval=0.25)
        except Failure as e:
            log("%s" % e)       # verify() names the windows left running
        chaos.sleep(SETTLE_S)
        fig, problems = verify(c, job, where, universe)
        gp, notes = growth(chaos)
        for n in notes:
            log("growth: %s" % n)
        problems += gp
        fig.update(seed=seed, kills=chaos.kills, stops=chaos.stops)
        print("chaos summary: seed %d kills %d stops %d windows %d rank events "
              "%d lost %d duplicated %d (skipped %d, running %d)" % (
                  seed, fig["kills"], fig["stops"], fig["windows"],
                  fig["rank_events"], fig["lost"], fig["duplicated"],
                  fig["skipped"], fig["running"]))
        sys.stdout.flush()
        for p in problems[:40]:
            log("problem: %s" % p)
        fig["problems"] = problems
        if problems:
            c.dump()
        return fig


def seed_from_env():
    s = os.environ.get("DYNPROF_CHAOS_SEED")
    return int(s) if s else random.SystemRandom().randrange(1, 1 << 31)


def test():
    seed = seed_from_env()
    fig = run_chaos(seed, WINDOWS)
    if fig["problems"]:
        raise Failure("%d problems (rerun with DYNPROF_CHAOS_SEED=%d)" % (
            len(fig["problems"]), seed))


if __name__ == "__main__":
    main(test)
