#!/usr/bin/python3
"""Coordinators that share their state in etcd, one of them the leader: real
etcd members (tests/support/etcd.py) and real coordinators, agents and ranks on
loopback.  One scenario per run, named by the first argument:

  redirect  a follower answers admin requests with a 307 to the leader (and
            dynprofctl, given both, follows it; given the follower alone it
            refuses to), /healthz says each one's role, and an agent given
            the follower first ends up on the leader (ERROR_NOT_LEADER).
  failover  three coordinators, two agents with two ranks each: the leader
            is SIGKILLed during a window; another leads within the lease's
            TTL + 1 s, the window completes, and the status shows every
            rank's start and stop exactly once.
  notleader three coordinators, four agents with a rank each: a follower
            watches the leader key (campaigns only a few times in a few
            TTLs, not every eighth of one); the leader is SIGKILLed;
            another leads within the TTL and a wide margin, every agent is
            back on it, and each one got at most 3 ERROR_NOT_LEADER answers
            on the way (counted in its log, exact).
  burst     three coordinators, two agents with six ranks each starting a
            window one after another: the leader is SIGKILLed once some
            have started and not all (their events in batches in flight);
            afterwards every rank's start and stop is there exactly once.
  stream    three coordinators, two agents with two ranks each: a client
            follows the job's event stream (/events?since=R&follow=1)
            from the summary's revision while the leader is SIGKILLed
            during one window and the next leader during the next; the
            client resumes on whichever coordinator answers, from the last
            revision it saw: never a 410 nor a `dropped` line, no revision
            seen twice, every rank's start and stop and every window's
            change once, and what it saw is exactly what the last leader
            lists from the same revision.
  replica   three coordinators, two agents with two ranks each: each
            follower answers the job's event stream itself (its copy of
            the model loaded from etcd as it changes), the same events at
            the same revisions as the leader, its answers saying the
            revision they reflect (X-Dynprof-Revision) while other reads
            still redirect; a client following one follower's stream (no
            redirect) keeps its one connection while the leader is
            SIGKILLed during a window, and sees every event of it once,
            exactly what the new leader lists.
  takeover  three coordinators, two agents with two ranks each: both
            followers SIGSTOPped, a window posted (their copies lack it),
            the leader SIGKILLed during another; woken after its key is
            gone, the follower that wins serves from its copy once the copy
            caught up with etcd (the posted window read first), not from a
            load of the whole state (dynprof_coordinator_takeovers_total):
            it lists the posted window, and every rank's start and stop of
            the other is there exactly once.
  reads     a leader and a follower, two agents with two labelled ranks
            each, a window started and stopped, a config and a rule, the
            ranks then held still (SIGSTOP): the follower answers GET
            /v1/jobs, /v1/nodes, the job's rank pages (whole, paged, by
            ?label= selector), its config and its rules itself, from its copy, and each answer equals the leader's
            byte for byte at the same X-Dynprof-Revision, but for the one
            field that is the leader's alone: a node's last_seen (the
            leader's clock at the agent's last frame, written only with
            the node's other changes); a write sent to the follower is
            still a 307 to the leader.
  copy      a leader and a follower, two agents with two ranks each: once
            the follower's copy is loaded, every kind of key changes (3
            windows run, a config, a rule, a window cancelled, another job
            forgotten whole, nodes' rows); the follower takes each key as
            the watch tells of it, never reading its copy whole again
            (dynprof_replica_loads_total unchanged, _changes_total up), and
            its reads and the job's event list equal the leader's byte for
            byte at the same revision.
  readsum   a leader and a follower, two agents with two ranks each, rank
            3 made slow (4 steps a second, the others 20): once the leader
            judges it a straggler (lag) and the ranks are held still, the
            follower answers the job's summary, /stragglers and
            /v1/jobs/J/nodes itself, from its copy (the leader's judgement
            and node counts stored for it), each equal to the leader's at
            the same X-Dynprof-Revision (etcd's revision the answer
            reflects) but for the judgement's "updated" (the leader's tick,
            written with its other changes), rank 3 and n1 named; a legacy
            job's summary on a third node (its agent's --legacy-dir) with
            its report, the same; and the
            status page served by the follower shows the straggler, its
            node straggling in the heat map and the window done, reading
            nothing from the leader (Chromium).
  heldhello three coordinators, two agents with a rank each; the follower
            after the leader in the agents' list SIGSTOPped (so that the
            other one wins), the leader SIGKILLed: the agents dial the
            next coordinator, which holds their hellos (they lost a
            leader) and, once it leads, welcomes them from the hellos it
            held: no ERROR_NOT_LEADER answer, no dial again.
  sigstop   the leader is SIGSTOPped past its lease: another takes the lead;
            woken up, the old one does not write (its write is refused or
            redirected, the new leader's state is unchanged) and steps down.
  etcdstop  etcd SIGSTOPped for 4 heartbeat intervals while two agents'
            ranks start and stop a window: /healthz of the leader and of a
            follower is answered within 250 ms meanwhile (neither loop
            waits for etcd, a keepalive nor a campaign), no agent is
            closed (as silent or for a commit), and afterwards every
            rank's start and stop is there exactly once.
  quorum    three etcd members: one lost is survived; two lost (no quorum)
            make writes fail with a 503 "store unavailable" while reads are
            served from memory; with the members back, writes succeed again
            and the leader holds exactly the windows etcd committed (read
            from etcd itself), each answered 201 among them.
  flags     the etcd flags' bounds: each bad value refused at start with the
            flag named, the limits themselves taken; with no etcd answering,
            the coordinator starts, follows nobody, and answers 503.
  ctl       dynprofctl given every coordinator, the leader first: SIGSTOPped,
            a read goes on to the others and is answered; SIGKILLed, its
            followers still naming it, reads and writes are retried until
            the new leader answers.  `status --follow`, paused through the
            kill and the window's end, resumes on the new leader from the
            last revision it saw: it shows the window done and each rank's
            start and stop of it once, never the status again; `trace
            --wait`, paused so too, reads the state again and says every
            rank stopped.
  compact   two coordinators; dynprof-loadgen's agents send a job's events
            in many commits, until the job's batches in etcd are many and
            heavy enough that the leader's own trigger rewrites its history
            (once the events went quiet) and deletes the batches before:
            fewer keys than before it; the follower took all of it key by
            key (its copy read whole once, at its start).  The leader
            SIGKILLed, the other holds every rank's start and stop of
            every window exactly once.
  forget    a job whose window ran (events in batches) forgotten with
            dynprofctl forget: none of its keys is left in etcd, and once
            the leader is SIGKILLed the new one, loading from etcd, does not
            know it; an agent of it stays subscribed: a new window of the
            job reaches its ranks.
  compare   a leader and a follower, an agent collecting into a trace store,
            three real torch DDP ranks over gloo, rank 1's compute 25 times
            the others': the window's comparison names rank 1 the straggler
            by its compute (the others wait for it in gloo:all_reduce);
            the leader SIGKILLed, the new one, its events (their summaries
            in their detail) loaded from etcd, gives the same comparison.
  tls       etcd over https with client certificates (deploy/tls/mkcerts.sh):
            a coordinator with --etcd-cacert, --etcd-cert and --etcd-key
            leads and writes; one without the client certificate reaches no
            etcd and follows nobody.
"""

import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (PYTHON, Cluster, Failure, Proc, binary,  # noqa: E402
                     check, events_of, log, main, npm_ci, skip,
                     start_ddp_ranks, wait_for, COORDINATOR, CTL)
import etcd  # noqa: E402

TTL = 2             # --etcd-lease-ttl of every coordinator here
# Agents of the compaction scenario: enough events, in enough commits, that a
# job's batches reach the store's trigger (32 batches and 1 MiB deflated).
COMPACT_AGENTS = 400
JOB = "etcd-%d" % os.getpid()


class HaCluster(Cluster):
    """A Cluster of several coordinators over one etcd cluster; url() and
    http() talk to the one use() chose (the leader, after find_leader())."""

    def __init__(self, name, etcd_members=1):
        Cluster.__init__(self, name)
        self.etcd = etcd.EtcdCluster(etcd_members, name=name)
        self.cleanups.append(self.etcd.close)
        self.coords = []        # [(Proc, agent_port, http_port)]
        self.prefix = "/dynprof-%s-%d/" % (name, os.getpid())

    def start_coordinators(self, n, ttl=None, heartbeat_ms=500):
        self.etcd.start()
        for i in range(n):
            ready = os.path.join(self.dir, "coord%d.ready" % i)
            p = Proc("coordinator%d" % i, [
                binary(COORDINATOR), "--listen", "127.0.0.1:0",
                "--http", "127.0.0.1:0",
                "--state-dir", os.path.join(self.dir, "state%d" % i),
                "--heartbeat-ms", str(heartbeat_ms), "--ready-file", ready,
                "--etcd-endpoints", self.etcd.endpoints,
                "--etcd-prefix", self.prefix,
                "--etcd-lease-ttl", str(ttl or TTL)],
                os.path.join(self.dir, "coordinator%d.log" % i))
            self.procs.append(p.start())
            kv = wait_for(lambda: self._ports(p, ready), 20,
                          "coordinator %d ready" % i)
            self.coords.append((p, int(kv["agent_port"]),
                                int(kv["http_port"])))
        return self.find_leader()

    def _ports(self, p, ready):
        if not p.alive():
            raise Failure("%s exited %s:\n%s" % (p.name, p.p.returncode,
                                                  p.output()[-2000:]))
        if not os.path.exists(ready):
            return None
        kv = dict(line.strip().partition("=")[::2] for line in open(ready))
        return kv if "http_port" in kv else None

    def use(self, i):
        self.http_port = self.coords[i][2]
        self.agent_port = self.coords[i][1]

    def role(self, i):
        self.use(i)
        code, body = self.http("GET", "/healthz", timeout=5)
        return body.get("role") if code == 200 else None

    def find_leader(self, timeout=10, exclude=()):
        """The index of the one coordinator that says it leads."""
        def cond():
            leaders = [i for i, (p, _, _) in enumerate(self.coords)
                       if i not in exclude and p.alive() and
                       self.role(i) == "leader"]
            return leaders if len(leaders) == 1 else None
        i = wait_for(cond, timeout, "one leader", interval=0.05)[0]
        self.use(i)
        return i

    def agent_addrs(self):
        return ",".join("127.0.0.1:%d" % a for _, a, _ in self.coords)

    def metric(self, i, name):
        self.use(i)
        import urllib.request
        with urllib.request.urlopen(self.url() + "/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        return None


def post_window(c, i, start, stop, follow=False):
    c.use(i)
    return c.http("POST", "/v1/jobs/%s/windows" % JOB,
                  {"start_step": start, "stop_step": stop})


def ctl(c, coordinators, *args):
    env = dict(os.environ)
    env["DYNPROF_COORDINATOR"] = coordinators
    return subprocess.run([binary(CTL)] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=30, universal_newlines=True)


def scenario_redirect():
    with HaCluster("etcd-redirect") as c:
        lead = c.start_coordinators(2)
        fol = 1 - lead
        check(c.role(fol) == "follower", "coordinator %d: role %s" % (
            fol, c.role(fol)))
        import urllib.error
        import urllib.request

        class NoFollow(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        opener = urllib.request.build_opener(NoFollow)
        lurl = "http://127.0.0.1:%d" % c.coords[lead][2]
        furl = "http://127.0.0.1:%d" % c.coords[fol][2]
        try:
            # A window's traces: a read only the leader answers.
            opener.open(furl + "/v1/jobs/%s/windows/1/traces?x=1" % JOB,
                        timeout=5)
            raise Failure("the follower answered a leader's read itself")
        except urllib.error.HTTPError as e:
            check(e.code == 307 and e.headers["Location"] ==
                  lurl + "/v1/jobs/%s/windows/1/traces?x=1" % JOB,
                  "follower: %s Location %s" % (e.code,
                                                 e.headers["Location"]))
        r = ctl(c, furl + "," + lurl, "trace", JOB, "--start", "100",
                "--stop", "110")
        check(r.returncode == 0, "dynprofctl via the follower: %s" % r.stdout)
        c.use(lead)
        code, st = c.http("GET", "/v1/jobs/%s" % JOB)
        check(code == 200 and len(st.get("windows", [])) == 1,
              "the leader has not the window dynprofctl sent: %s %s" % (code, st))
        r = ctl(c, furl, "trace", JOB, "--start", "200", "--stop", "210")
        check(r.returncode != 0 and "not one of the coordinators" in r.stdout,
              "dynprofctl followed a redirect it was not given: %s" % r.stdout)
        log("follower redirects; dynprofctl follows to a coordinator it knows")
        # An agent that lists the follower first ends up on the leader.
        n = c.node("n0", coord_addr="127.0.0.1:%d,127.0.0.1:%d" % (
            c.coords[fol][1], c.coords[lead][1]))
        n.start_agent()

        def on_leader():
            c.use(lead)
            code, body = c.http("GET", "/v1/nodes")
            return [x for x in body.get("nodes", [])
                    if x.get("node") == "n0" and x.get("state") == "connected"]
        wait_for(on_leader, 15, "agent n0 connected to the leader")
        check(c.metric(fol, "dynprof_agents_refused_total") >= 1,
              "the follower did not refuse the agent")
        log("agent sent to the leader by the follower's ERROR_NOT_LEADER")


def two_nodes_window(c, steps):
    """Two agents with two ranks each at 20 steps/s, given every coordinator;
    a window of steps steps from 30 steps on (none if steps is None): its
    id, start and stop."""
    addrs = c.agent_addrs()
    for i in range(2):
        n = c.node("n%d" % i, coord_addr=addrs)
        n.start_agent()
        for k in range(2):
            n.start_rank(JOB, 2 * i + k, rate=20)
    st = c.wait_ranks(JOB, 4, min_step=5)
    if steps is None:
        return None
    top = st["progress"]["max_step"]
    w = c.add_window(JOB, {"start_step": top + 30,
                           "stop_step": top + 30 + steps})
    return w["id"], w["start_step"], w["stop_step"]


def wait_started(c, wid):
    """Until each of the 4 ranks has started window wid."""
    def started():
        st = c.status(JOB)
        return all(events_of(r, "started", wid) for r in st["ranks"]) \
            and len(st["ranks"]) == 4
    wait_for(started, 30, "every rank started window %d" % wid,
             interval=0.05)


def each_once(c, wid, a, b):
    """Once window wid is done: each rank started it at a and stopped it at
    b, once."""
    c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=60)
    time.sleep(1.0)         # replays, if any, have landed
    st = c.status(JOB)
    for r in st["ranks"]:
        s, e = events_of(r, "started", wid), events_of(r, "stopped", wid)
        check(len(s) == 1 and len(e) == 1 and s[0]["step"] == a and
              e[0]["step"] == b, "rank %d: started %s stopped %s" % (
                  r["rank"], s, e))


def scenario_failover():
    with HaCluster("etcd-failover") as c:
        lead = c.start_coordinators(3)
        wid, a, b = two_nodes_window(c, 100)
        wait_started(c, wid)
        p = c.coords[lead][0]
        log("SIGKILL leader coordinator%d (pid %d) during window %d (%d-%d)"
            % (lead, p.pid, wid, a, b))
        t0 = time.monotonic()
        p.kill9()
        # How soon is bench/failover.sh's figure (TTL plus a campaign period,
        # bench/README.md); here, that one leads at all, with a deadline
        # no loaded machine reaches.
        new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
        log("coordinator%d leads after %.2f s" % (new, time.monotonic() - t0))
        each_once(c, wid, a, b)
        log("window %d completed across the failover, each start and stop "
            "once" % wid)


def not_leader_answers(n, since):
    """The ERROR_NOT_LEADER answers node n's agent logged after byte since."""
    with open(n.agent.logpath, "rb") as f:
        f.seek(since)
        return f.read().decode(errors="replace").count("refused: error 7:")


def agents_on_leader(c, count):
    """Three coordinators, count agents with a rank each, every one on the
    leader: its index and the nodes."""
    lead = c.start_coordinators(3)
    addrs = c.agent_addrs()
    nodes = []
    for i in range(count):
        n = c.node("n%d" % i, coord_addr=addrs)
        n.start_agent()
        n.start_rank(JOB, i, rate=20)
        nodes.append(n)
    c.wait_ranks(JOB, count, min_step=5)
    wait_for(lambda: c.metric(lead, "dynprof_agents_connected") == count,
             30, "every agent on the leader")
    return lead, nodes


def scenario_notleader():
    with HaCluster("etcd-notleader") as c:
        lead, nodes = agents_on_leader(c, 4)
        # Followers watch the leader key instead of campaigning every
        # eighth of the TTL: over 3 TTLs, a campaign at start and perhaps
        # one more (old code: 24 each).
        fol = [i for i in range(3) if i != lead]
        wait_for(lambda: all(c.metric(i, "dynprof_coordinator_leader_watched")
                             == 1 for i in fol), 30, "followers watching")
        before = [c.metric(i, "dynprof_coordinator_campaigns_total")
                  for i in fol]
        time.sleep(3 * TTL)
        after = [c.metric(i, "dynprof_coordinator_campaigns_total")
                 for i in fol]
        check(all(b - a <= 2 for a, b in zip(before, after)),
              "followers campaigned %s times in %d s" % (
                  [b - a for a, b in zip(before, after)], 3 * TTL))
        marks = [os.path.getsize(n.agent.logpath) for n in nodes]
        p = c.coords[lead][0]
        log("SIGKILL leader coordinator%d (pid %d), 4 agents on it"
            % (lead, p.pid))
        t0 = time.monotonic()
        p.kill9()
        new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
        log("coordinator%d leads after %.2f s (TTL %d s)"
            % (new, time.monotonic() - t0, TTL))
        wait_for(lambda: c.metric(new, "dynprof_agents_connected") == 4, 60,
                 "every agent back on the new leader")
        log("every agent back after %.2f s" % (time.monotonic() - t0))
        counts = [not_leader_answers(n, m) for n, m in zip(nodes, marks)]
        log("ERROR_NOT_LEADER answers per agent: %s" % counts)
        check(max(counts) <= 3, "an agent got more than 3 ERROR_NOT_LEADER "
              "answers in one failover: %s" % counts)


def scenario_burst():
    with HaCluster("etcd-burst") as c:
        lead = c.start_coordinators(3)
        addrs = c.agent_addrs()
        per = 6
        for i in range(2):
            n = c.node("n%d" % i, coord_addr=addrs)
            n.start_agent()
            for k in range(per):
                n.start_rank(JOB, per * i + k, rate=40)
        ranks = list(range(2 * per))
        st = c.wait_ranks(JOB, len(ranks), min_step=5)
        top = st["progress"]["max_step"]
        w = c.add_window(JOB, {"start_step": top + 40, "stop_step": top + 80})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]

        def some_started():
            st = c.status(JOB)
            n = sum(1 for r in st["ranks"] if events_of(r, "started", wid))
            return n if 0 < n < len(ranks) else None
        # The ranks came up one after another: they reach the window so too.
        n = wait_for(some_started, 60, "some ranks started, not all",
                     interval=0.01)
        p = c.coords[lead][0]
        log("SIGKILL leader coordinator%d with %d of %d ranks started in "
            "window %d (%d-%d)" % (lead, n, len(ranks), wid, a, b))
        p.kill9()
        new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
        log("coordinator%d leads" % new)
        c.wait_window_done(JOB, wid, ranks, timeout=90)
        time.sleep(1.0)         # replays, if any, have landed
        st = c.status(JOB)
        check(len(st["ranks"]) == len(ranks), "ranks %d" % len(st["ranks"]))
        for r in st["ranks"]:
            s, e = events_of(r, "started", wid), events_of(r, "stopped", wid)
            check(len(s) == 1 and len(e) == 1 and s[0]["step"] == a and
                  e[0]["step"] == b, "rank %d: started %s stopped %s" % (
                      r["rank"], s, e))
        log("every start and stop of window %d once across the failover" %
            wid)


class StreamClient(threading.Thread):
    """Follows JOB's event stream from a revision as a client would: on
    whichever live coordinator answers (a 307 followed), resumed from the
    last revision seen after a break or 3 heartbeat intervals of silence.
    Keeps every event line; a 410, a `dropped` or `end` line, or a revision
    not above the last one is an error."""

    def __init__(self, c, since, only=None):
        threading.Thread.__init__(self, daemon=True)
        self.c, self.since, self.only = c, since, only
        self.events, self.errors = [], []
        self.resumes = 0
        self.done = threading.Event()

    def _open(self, port, path, hops=0):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
        conn.request("GET", path)
        r = conn.getresponse()
        if r.status == 307 and self.only is not None:
            self.errors.append("coordinator at port %d redirected" % port)
        elif r.status == 307 and hops < 3:
            loc = urllib.parse.urlsplit(r.getheader("Location"))
            conn.close()
            return self._open(loc.port, loc.path + "?" + loc.query, hops + 1)
        return conn, r

    def _follow(self, port):
        path = "/v1/jobs/%s/events?since=%d&follow=1" % (JOB, self.since)
        conn, r = self._open(port, path)
        try:
            if r.status == 410:
                self.errors.append("410 resuming from %d: %s" % (
                    self.since, r.read()[:300]))
                return
            if r.status != 200:
                return          # a coordinator not serving yet
            self.resumes += 1
            while not self.done.is_set():
                line = r.readline()
                if not line:
                    return
                ev = json.loads(line)
                if ev["type"] in ("dropped", "end"):
                    self.errors.append("%s line: %s" % (ev["type"], ev))
                    return
                if ev["type"] == "heartbeat":
                    continue
                if ev["rev"] <= self.since:
                    self.errors.append("revision %d after %d" % (
                        ev["rev"], self.since))
                self.since = ev["rev"]
                self.events.append(ev)
        finally:
            conn.close()

    def run(self):
        while not self.done.is_set() and not self.errors:
            for i, (p, _, port) in enumerate(self.c.coords):
                if self.done.is_set() or self.errors:
                    break
                if not p.alive() or self.only not in (None, i):
                    continue
                try:
                    self._follow(port)
                except (OSError, http.client.HTTPException, ValueError):
                    pass        # gone or silent: the next one
            time.sleep(0.05)


def stream_window(c, steps):
    """A window of steps steps from 30 steps past the ranks' on the leader:
    its id once every rank started it."""
    st = c.status(JOB)
    top = st["progress"]["max_step"]
    w = c.add_window(JOB, {"start_step": top + 30,
                           "stop_step": top + 30 + steps})
    wait_started(c, w["id"])
    return w["id"]


def stream_key(ev):
    """What an event says, without its time."""
    return tuple(ev.get(k) for k in ("rev", "type", "rank", "node", "kind",
                                     "window", "step", "change",
                                     "start_step", "stop_step", "generation"))


def scenario_stream():
    with HaCluster("etcd-stream") as c:
        lead = c.start_coordinators(3)
        two_nodes_window(c, None)
        code, summ = c.http("GET", "/v1/jobs/%s" % JOB)
        check(code == 200, "summary: %s %s" % (code, summ))
        since0 = summ["revision"]
        client = StreamClient(c, since0)
        client.start()
        killed, wids = [], []
        for _ in range(2):
            wid = stream_window(c, 60)
            wids.append(wid)
            p = c.coords[lead][0]
            log("SIGKILL leader coordinator%d during window %d, the client "
                "at revision %d" % (lead, wid, client.since))
            p.kill9()
            killed.append(lead)
            lead = c.find_leader(timeout=10 * TTL + 10, exclude=killed)
            log("coordinator%d leads" % lead)
            c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=60)

        def seen_done():
            check(not client.errors, "the client: %s" % client.errors)
            return [e for e in client.events if e["type"] == "window" and
                    e["change"] == "done" and e["window"] == wids[-1]]
        wait_for(seen_done, 60, "the client saw window %d done" % wids[-1])
        time.sleep(1.0)         # replays, if any, have landed
        client.done.set()
        client.join(10)
        check(not client.errors, "the client: %s" % client.errors)
        revs = [e["rev"] for e in client.events]
        check(len(revs) == len(set(revs)), "a revision seen twice")
        # Each rank's start and stop, each window's change: once.
        for wid in wids:
            for rk in range(4):
                for kind in ("started", "stopped"):
                    n = [e for e in client.events if e["type"] == "rank" and
                         e["rank"] == rk and e["window"] == wid and
                         e["kind"] == kind]
                    check(len(n) == 1, "rank %d %s window %d: %d times: %s"
                          % (rk, kind, wid, len(n), n))
            for change in ("scheduled", "done"):
                n = [e for e in client.events if e["type"] == "window" and
                     e["window"] == wid and e.get("change") == change]
                check(len(n) == 1, "window %d %s %d times" % (wid, change,
                                                             len(n)))
        attached = [e["rank"] for e in client.events
                    if e["type"] == "rank" and e["kind"] == "attached"]
        check(len(attached) == len(set(attached)),
              "a rank attached twice: %s" % attached)
        # What the client saw is what the last leader holds, no more, no
        # fewer: no gap.
        c.use(lead)
        with urllib.request.urlopen("%s/v1/jobs/%s/events?since=%d" % (
                c.url(), JOB, since0), timeout=10) as r:
            listed = [json.loads(x) for x in r.read().decode().splitlines()]
        listed = [e for e in listed if "rev" in e]
        seen = [stream_key(e) for e in client.events]
        held = [stream_key(e) for e in listed]
        check(seen == held, "the client saw %d events, the leader lists %d:"
              " only seen %s, only listed %s" % (
                  len(seen), len(held), sorted(set(seen) - set(held))[:5],
                  sorted(set(held) - set(seen))[:5]))
        log("%d events followed from revision %d through 2 failovers (%d "
            "connections): no 410, none twice, none missing" % (
                len(seen), since0, client.resumes))


def scenario_compact():
    agents, ranks, windows = COMPACT_AGENTS, 10, 10
    with HaCluster("etcd-compact") as c:
        lead = c.start_coordinators(2)
        job = JOB + "-c"
        batches = c.prefix + "evbatch/%s/" % job
        out = os.path.join(c.dir, "loadgen.out")
        # A job of its own row (a config), kept once its agents leave.
        code, body = c.http("PUT", "/v1/jobs/%s/config" % job,
                            {"start_step": -1, "stop_step": -1})
        check(code in (200, 201), "PUT config: %s %s" % (code, body))
        log("dynprof-loadgen: %d agents x %d ranks, %d windows each, "
            "a few events in flight per agent" % (agents, ranks, windows))
        with open(out, "w") as f:
            rc = subprocess.call([
                binary("bench/dynprof-loadgen"), "--coordinator",
                "127.0.0.1:%d" % c.agent_port, "--http",
                "127.0.0.1:%d" % c.http_port, "--agents", str(agents),
                "--ranks", str(ranks), "--events", str(2 * ranks * windows),
                "--inflight", "4", "--mode", "events", "--job", job,
                "--node-prefix", "cmp"], stdout=f, stderr=subprocess.STDOUT,
                timeout=180)
        check(rc == 0, "dynprof-loadgen exited %d:\n%s" % (
            rc, open(out).read()[-2000:]))
        before = len(c.etcd.keys(batches))
        log("every event acknowledged; %d batch values of the job in etcd"
            % before)
        p = c.coords[lead][0]
        wait_for(lambda: "stored history rewritten" in p.output(), 60,
                 "the leader compacting the job's batches")
        after = wait_for(lambda: (lambda n: n if n < before else None)(
            len(c.etcd.keys(batches))), 30, "fewer batch values")
        log("compacted by the leader's trigger: %d batch values, %d before"
            % (after, before))
        check(after <= before // 2, "%d batch values after the compaction, "
              "%d before" % (after, before))
        # The follower took the snapshot and the deletes one by one: its
        # copy was read whole once, at its start.
        fol = 1 - lead
        time.sleep(1.0)
        loads = c.metric(fol, "dynprof_replica_loads_total")
        took = c.metric(fol, "dynprof_replica_changes_total")
        log("the follower's copy: %s whole load(s), %s keys taken one by "
            "one, the longest in %s s" % (loads, took, c.metric(
                fol, "dynprof_replica_change_seconds_max")))
        check(loads == 1, "the follower read its copy whole %s times" %
              loads)

        p.kill9()
        new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
        log("leader SIGKILLed; coordinator%d leads, loaded %d batch values "
            "of the job" % (new, len(c.etcd.keys(batches))))
        st = c.status(job)
        check(len(st["ranks"]) == agents * ranks, "ranks %d, expected %d" % (
            len(st["ranks"]), agents * ranks))
        for r in st["ranks"]:
            for w in range(1, windows + 1):
                s_, e_ = events_of(r, "started", w), events_of(r, "stopped", w)
                check(len(s_) == 1 and len(e_) == 1,
                      "rank %d window %d: started %s stopped %s" % (
                          r["rank"], w, s_, e_))
            check(len(r["events"]) == 2 * windows, "rank %d: %d events" % (
                r["rank"], len(r["events"])))
        log("the new leader holds every rank's start and stop of each of "
            "the %d windows once (%d events)" % (
                windows, agents * ranks * windows * 2))


def get_rev(port, path):
    """GET path of the coordinator at port, no redirect followed: the
    status, the X-Dynprof-Revision header (an int or None) and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        rev = r.getheader("X-Dynprof-Revision")
        return r.status, int(rev) if rev is not None else None, r.read()
    finally:
        conn.close()


def listed_events(port, since):
    """The job's events after since the coordinator at port lists, and the
    revision its answer reflects."""
    code, rev, body = get_rev(port, "/v1/jobs/%s/events?since=%d" % (JOB,
                                                                     since))
    check(code == 200, "events at port %d: %s %s" % (port, code, body[:300]))
    lines = [json.loads(x) for x in body.decode().splitlines()]
    return rev, [stream_key(e) for e in lines if "rev" in e]


def scenario_replica():
    with HaCluster("etcd-replica") as c:
        lead = c.start_coordinators(3)
        two_nodes_window(c, None)
        code, summ = c.http("GET", "/v1/jobs/%s" % JOB)
        since0 = summ["revision"]
        wid = stream_window(c, 20)
        c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=60)
        lport = c.coords[lead][2]
        # The status shows what the leader's model holds, its stream what
        # etcd committed: the stops listed a little after they show, and
        # the window's done (a commit after theirs) later still.

        def stops_and_done():
            held = listed_events(lport, since0)[1]
            stops = [k for k in held if k[4] == "stopped" and k[5] == wid]
            done = [k for k in held if k[1] == "window" and
                    k[7] == "done" and k[5] == wid]
            return len(stops) == 4 and len(done) == 1
        wait_for(stops_and_done, 30, "the leader listing window %d's 4 "
                 "stops and its done" % wid)
        fols = [i for i in range(3) if i != lead]
        for f in fols:
            fport = c.coords[f][2]

            def same():
                lrev, held = listed_events(lport, since0)
                frev, seen = listed_events(fport, since0)
                return (frev, held) if held == seen else None
            rev, held = wait_for(same, 10, "coordinator%d's events as the "
                                 "leader's" % f)
            check(len(held) >= 10, "only %d events listed" % len(held))
            code, _, _ = get_rev(fport, "/v1/jobs/%s/windows/%d/traces" % (
                JOB, wid))
            check(code == 307, "a follower answered a window's traces: %d"
                  % code)
            log("follower coordinator%d lists the leader's %d events (its "
                "copy at etcd revision %d)" % (f, len(held), rev))
        # A client of one follower's stream, through the leader's death.
        watcher = fols[0]
        client = StreamClient(c, since0, only=watcher)
        client.start()
        wait_for(lambda: len(client.events) >= len(held) or client.errors,
                 10, "the client read what was listed")
        st = c.status(JOB)
        top = st["progress"]["max_step"]
        w = c.add_window(JOB, {"start_step": top + 30,
                               "stop_step": top + 90})
        wait_started(c, w["id"])
        log("SIGKILL leader coordinator%d during window %d" % (lead,
                                                              w["id"]))
        c.coords[lead][0].kill9()
        lead = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
        c.wait_window_done(JOB, w["id"], [0, 1, 2, 3], timeout=60)

        def seen_done():
            check(not client.errors, "the client: %s" % client.errors)
            return [e for e in client.events if e["type"] == "window" and
                    e["change"] == "done" and e["window"] == w["id"]]
        wait_for(seen_done, 30, "the client saw window %d done" % w["id"])
        time.sleep(1.0)
        client.done.set()
        client.join(10)
        check(not client.errors, "the client: %s" % client.errors)
        _, held = listed_events(c.coords[lead][2], since0)
        seen = [stream_key(e) for e in client.events]
        check(seen == held, "the client on coordinator%d saw %d events, the "
              "leader lists %d" % (watcher, len(seen), len(held)))
        check(client.resumes == 1, "the client connected %d times" %
              client.resumes)
        log("a client of coordinator%d's stream saw all %d events once "
            "through the leader's death, on one connection" % (
                watcher, len(seen)))


def scenario_takeover():
    with HaCluster("etcd-takeover") as c:
        lead = c.start_coordinators(3)
        fol = [i for i in range(3) if i != lead]
        wid, a, b = two_nodes_window(c, 100)
        wait_started(c, wid)
        # The followers' copies hold the window started: loaded (from the
        # watch of the prefix) before they stop.
        wait_for(lambda: all((c.metric(i, "dynprof_replica_loads_total") or 0)
                             >= 1 for i in fol), 30, "followers' copies")
        time.sleep(1.0)
        for i in fol:
            c.coords[i][0].signal(signal.SIGSTOP)
        code, w = post_window(c, lead, 1000000, 1000010)
        check(code == 201, "window posted on the leader: %s %s" % (code, w))
        p = c.coords[lead][0]
        log("followers SIGSTOPped; window %d posted; SIGKILL leader "
            "coordinator%d during window %d" % (w["id"], lead, wid))
        p.kill9()
        # The key goes with the lease (TTL) while both sleep: woken, the
        # watches tell the window's put and the key's delete at once.
        time.sleep(TTL + 2)
        for i in fol:
            c.coords[i][0].signal(signal.SIGCONT)
        new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
        copy = c.metric(new, 'dynprof_coordinator_takeovers_total'
                        '{model="copy"}')
        load = c.metric(new, 'dynprof_coordinator_takeovers_total'
                        '{model="load"}')
        log("coordinator%d leads: takeovers from its copy %s, loaded %s, "
            "%.3f s from the campaign won to serving" % (
                new, copy, load,
                c.metric(new, "dynprof_coordinator_takeover_seconds") or -1))
        for line in c.coords[new][0].output().splitlines():
            if " leader_" in line or " replica_" in line:
                log(line)
        check(copy == 1 and load == 0, "the new leader served from its "
              "copy: copy %s, load %s" % (copy, load))
        c.use(new)
        code, st = c.http("GET", "/v1/jobs/%s" % JOB, timeout=10)
        ids = [x["id"] for x in st.get("windows", [])] if code == 200 else []
        check(w["id"] in ids, "window %d posted before the kill listed by "
              "the new leader: %s %s" % (w["id"], code, ids))
        each_once(c, wid, a, b)
        log("window %d listed; window %d completed across the failover, "
            "each start and stop once" % (w["id"], wid))
def raw_get(port, path):
    """GET path of the coordinator at port, no redirect followed: the
    status, X-Dynprof-Revision (an int or None) and the body's bytes."""
    return get_rev(port, path)


# What each coordinator answers itself, compared between them; the nodes'
# last_seen is the leader's alone (scenario_reads).
READS = ["/v1/jobs", "/v1/nodes", "/v1/jobs/%s/ranks" % JOB,
         "/v1/jobs/%s/ranks?limit=1&after=0" % JOB,
         "/v1/jobs/%s/ranks?label=%s" % (JOB, urllib.parse.quote("pp=1")),
         "/v1/jobs/%s/ranks?state=attached,armed,done&node=n1" % JOB,
         "/v1/jobs/%s/config" % JOB, "/v1/jobs/%s/rules" % JOB]


def without_last_seen(path, body):
    """The answer's bytes, with each node's last_seen taken out of
    /v1/nodes (the one field the leader alone keeps current), and an event
    stream's notes (its heartbeat and end lines: each answer's own, timed
    by its coordinator's clock, so that two answers a millisecond apart
    differ there); the events themselves ({"rev": ...) are kept."""
    if "/events" in path:
        return b"".join(x for x in body.splitlines(True)
                        if not x.startswith(b'{"type":'))
    if path != "/v1/nodes":
        return body
    doc = json.loads(body)
    for n in doc["nodes"]:
        n.pop("last_seen", None)
    return json.dumps(doc, sort_keys=True).encode()


def same_reads(c, lead, fol, paths, strip=without_last_seen):
    """Until the follower's answer to each of paths equals the leader's,
    byte for byte once strip(path, body) took out what is the leader's
    alone (the nodes' last_seen), at the same X-Dynprof-Revision; returns
    each path's answer on the follower, decoded."""
    lport, fport = c.coords[lead][2], c.coords[fol][2]
    last = {}
    seen = {}

    def same(path):
        def cond():
            lcode, lrev, lbody = raw_get(lport, path)
            fcode, frev, fbody = raw_get(fport, path)
            last[path] = (lcode, lrev, lbody[:400], fcode, frev,
                          fbody[:400])
            check(fcode != 307, "the follower redirected %s" % path)
            if lcode != 200 or fcode != 200 or lrev is None or \
                    lrev != frev:
                return None
            lb = strip(path, lbody)
            fb = strip(path, fbody)
            # Where they differ first, for the failure's message.
            at = next((i for i in range(min(len(lb), len(fb)))
                       if lb[i] != fb[i]), min(len(lb), len(fb)))
            last[path] = (lcode, lrev, lb[max(0, at - 200):at + 300], fcode,
                          frev, fb[max(0, at - 200):at + 300])
            if lb == fb:
                seen[path] = fbody
                return (lrev, len(lb))
            return None
        try:
            return wait_for(cond, 60, "coordinator%d's %s as the "
                            "leader's" % (fol, path), interval=0.2)
        except Failure:
            raise Failure("%s: leader %s rev %s %r; follower %s rev %s "
                          "%r" % ((path,) + last[path]))
    for path in paths:
        rev, size = same(path)
        log("follower's %s equals the leader's at revision %d (%d "
            "bytes)" % (path, rev, size))
    return {p: json.loads(b) if p.find("/events") < 0 else b
            for p, b in seen.items()}


def config_and_rule(c, lead):
    """The job's config and a rule, put on the leader."""
    c.use(lead)
    code, body = c.http("PUT", "/v1/jobs/%s/config" % JOB,
                        {"profiler_level": 1})
    check(code == 200, "PUT config: %s %s" % (code, body))
    code, body = c.http("POST", "/v1/jobs/%s/rules" % JOB, {
        "when": "straggler", "steps": 10, "min_interval_s": 86400})
    check(code == 201, "POST rule: %s %s" % (code, body))


def labelled_ranks(c, rate=lambda r: 20):
    """Two agents given every coordinator, two labelled ranks each (pp=NODE,
    tp=K) at rate(rank) steps/s: the ranks' processes, once each stepped."""
    addrs = c.agent_addrs()
    ranks = []
    for i in range(2):
        n = c.node("n%d" % i, coord_addr=addrs)
        n.start_agent()
        for k in range(2):
            r = 2 * i + k
            ranks.append(n.start_rank(JOB, r, rate=rate(r),
                                      labels="pp=%d,tp=%d" % (i, k)))
    c.wait_ranks(JOB, 4, min_step=5)
    return ranks


def scenario_copy():
    with HaCluster("etcd-copy") as c:
        lead = c.start_coordinators(2)
        fol = 1 - lead
        ranks = labelled_ranks(c)
        wait_for(lambda: (c.metric(fol, "dynprof_replica_loads_total") or 0)
                 >= 1, 30, "the follower's copy loaded")
        loads = c.metric(fol, "dynprof_replica_loads_total")
        changes = c.metric(fol, "dynprof_replica_changes_total") or 0
        # Every kind of key: batches of events and ranks' rows, windows
        # put and put again, a job's row put again (a config, a rule), a
        # window cancelled, a job forgotten whole (its row, windows and
        # batches deleted), nodes' rows.
        c.use(lead)
        for _ in range(3):
            wid = stream_window(c, 10)
            c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=60)
        config_and_rule(c, lead)
        code, w = post_window(c, lead, 10 ** 7, 10 ** 7 + 5)
        check(code == 201, "a window far ahead: %s %s" % (code, w))
        code, body = c.http("DELETE", "/v1/jobs/%s/windows/%d" % (JOB,
                                                                w["id"]))
        check(code == 200, "cancel: %s %s" % (code, body))
        other = JOB + "-gone"
        code, body = c.http("POST", "/v1/jobs/%s/windows" % other,
                            {"start_step": 100, "stop_step": 110})
        check(code == 201, "a window of %s: %s %s" % (other, code, body))
        wait_for(lambda: other in raw_get(c.coords[fol][2], "/v1/jobs")[2]
                 .decode(), 30, "the follower listing %s" % other)
        r = ctl(c, c.url(), "forget", other)
        check(r.returncode == 0, "forget: %d %s" % (r.returncode, r.stdout))
        for p in ranks:
            p.signal(signal.SIGSTOP)
        log("3 windows started and stopped on 4 ranks, a config, a rule, a "
            "window cancelled, job %s forgotten; the ranks held still"
            % other)
        same_reads(c, lead, fol, READS + ["/v1/jobs/%s/events?since=0" % JOB])
        check(other not in raw_get(c.coords[fol][2], "/v1/jobs")[2].decode(),
              "the follower still lists %s" % other)
        after = c.metric(fol, "dynprof_replica_loads_total")
        took = (c.metric(fol, "dynprof_replica_changes_total") or 0) - changes
        log("the follower's copy: %s whole load(s) before, %s after; %d "
            "keys taken one by one" % (loads, after, took))
        check(after == loads, "the follower read its copy whole %d times "
              "more" % (after - loads))
        check(took >= 20, "the follower took %d keys one by one" % took)
        for p in ranks:
            p.signal(signal.SIGCONT)


def scenario_unscheduled():
    """A job nobody scheduled (no window, no config: its ranks attached) is
    no leader's memory alone: its ranks' rows ride in its batches, so a
    follower lists it and a new leader knows it from the store, with no
    agent reporting again."""
    job = JOB + "-none"
    with HaCluster("etcd-unscheduled") as c:
        lead = c.start_coordinators(2)
        fol = 1 - lead
        n = c.node("n0", coord_addr=c.agent_addrs())
        n.start_agent()
        ranks = [n.start_rank(job, k, rate=20) for k in range(2)]
        c.use(lead)
        c.wait_ranks(job, 2, min_step=5)

        def listed(i):
            code, _, body = raw_get(c.coords[i][2], "/v1/jobs")
            jobs = {j["job"]: j for j in json.loads(body)["jobs"]} \
                if code == 200 else {}
            return jobs.get(job, {}).get("ranks") == 2 and \
                jobs[job]["windows"] == 0
        wait_for(lambda: listed(fol), 30, "the follower listing %s with 2 "
                 "ranks" % job)
        # Nothing reports again: the ranks and the agent held still, then
        # the leader killed.
        for p in ranks + [n.agent]:
            p.signal(signal.SIGSTOP)
        log("job %s of 2 ranks, nobody scheduled it: listed by the "
            "follower; agent and ranks stopped, SIGKILL leader "
            "coordinator%d" % (job, lead))
        c.coords[lead][0].kill9()
        try:
            new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead,))
            check(listed(new), "the new leader does not list %s with its 2 "
                  "ranks: %s" % (job, raw_get(c.coords[new][2],
                                             "/v1/jobs")[2][:300]))
            code, _, body = raw_get(c.coords[new][2], "/v1/jobs/%s/ranks" %
                                    job)
            got = sorted(r["rank"] for r in json.loads(body)["ranks"])
            check(code == 200 and got == [0, 1], "the new leader's ranks "
                  "of %s: %s %s" % (job, code, body[:300]))
            log("the new leader coordinator%d knows %s and its ranks %s "
                "from the store" % (new, job, got))
        finally:
            for p in ranks + [n.agent]:
                p.signal(signal.SIGCONT)


def scenario_reads():
    with HaCluster("etcd-reads") as c:
        lead = c.start_coordinators(2)
        fol = 1 - lead
        ranks = labelled_ranks(c)
        wid = stream_window(c, 20)
        c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=60)
        config_and_rule(c, lead)
        for p in ranks:
            p.signal(signal.SIGSTOP)
        log("window %d started and stopped on 4 ranks; the ranks held "
            "still" % wid)
        lport, fport = c.coords[lead][2], c.coords[fol][2]
        same_reads(c, lead, fol, READS)
        code, _, body = raw_get(fport, "/v1/jobs/%s/ranks?label=pp=1" % JOB)
        check(code == 200 and [r["rank"] for r in json.loads(body)["ranks"]]
              == [2, 3], "the follower's ranks of pp=1: %s %s" % (code, body))
        st = json.loads(raw_get(fport, "/v1/nodes")[2])
        check(sorted((n["node"], n["state"]) for n in st["nodes"]) ==
              [("n0", "connected"), ("n1", "connected")],
              "the follower's nodes: %s" % st)
        conn = http.client.HTTPConnection("127.0.0.1", fport, timeout=10)
        conn.request("POST", "/v1/jobs/%s/windows" % JOB, json.dumps(
            {"start_step": 10 ** 6, "stop_step": 10 ** 6 + 5}),
            {"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        conn.close()
        check(r.status == 307 and r.getheader("Location", "").startswith(
            "http://127.0.0.1:%d/" % lport), "a write to the follower: %s %s"
            % (r.status, r.getheader("Location")))
        log("a write sent to the follower is a 307 to the leader")
        rows = c.metric(lead, "dynprof_node_rows_total")
        check(rows is not None and rows >= 2, "the leader stored %s node "
              "rows" % rows)
        # The nodes' rows go in batches (server/nodeview.c), not a key each.
        keys = c.etcd.keys(c.prefix)
        nb = [k for k in keys if k.startswith(c.prefix + "nodebatch/")]
        each = [k for k in keys if k.startswith(c.prefix + "nodes/")]
        check(1 <= len(nb) <= 2 and not each, "the nodes' rows' keys: "
              "batches %s, a key each %s" % (nb, each))
        log("the nodes' rows are in %d batch value(s): %s" % (len(nb), nb))
        # A batch that does not read is set aside, whole, by the follower's
        # load; the rows of the others are still taken.
        for i, bad in enumerate(['{"n9": [1], "n0": {}}', 'not json',
                                 '{"../x": {}}']):
            etcd_put(c, c.prefix + "nodebatch/99%02d" % i, bad)

        def refused():
            q = c.metric(fol, 'dynprof_store_rows_quarantined{table="agents"}')
            if q is None or q < 3:
                return None
            st = json.loads(raw_get(fport, "/v1/nodes")[2])
            got = sorted((n["node"], n["state"]) for n in st["nodes"])
            return got if got == [("n0", "connected"),
                                  ("n1", "connected")] else None
        wait_for(refused, 30, "the follower setting the bad batches aside")
        log("the follower set 3 bad batches of nodes' rows aside and still "
            "shows n0 and n1 connected")
        for p in ranks:
            p.signal(signal.SIGCONT)


# What a follower answers from the leader's stored judgement
# (scenario_readsum).
LJOB = "legacy-%d" % os.getpid()
READSUM = ["/v1/jobs/%s" % JOB, "/v1/jobs/%s/stragglers" % JOB,
           "/v1/jobs/%s/nodes" % JOB, "/v1/jobs/%s" % LJOB]


def without_updated(path, body):
    """The answer's bytes without the judgement's "updated" (the leader's
    tick, written only with the judgement's other changes)."""
    doc = json.loads(body)
    for d in (doc, doc.get("stragglers")):
        if isinstance(d, dict):
            d.pop("updated", None)
    return json.dumps(doc, sort_keys=True).encode()


def scenario_readsum():
    with HaCluster("etcd-readsum") as c:
        lead = c.start_coordinators(2)
        fol = 1 - lead
        ranks = labelled_ranks(c, lambda r: 4 if r == 3 else 20)
        addrs = c.agent_addrs()
        # A legacy job on a third node (docs/legacy.md): its report is the
        # leader's memory, stored for the follower.
        n = c.node("n2", coord_addr=addrs)
        ldir = os.path.join(n.dir, "legacy")
        os.makedirs(os.path.join(ldir, LJOB))
        with open(os.path.join(ldir, LJOB, "dynprof.dialect"), "w") as f:
            f.write("mindspore-2.4\n")
        conf = os.path.join(n.dir, "agent.conf")
        with open(conf, "w") as f:
            f.write("legacy-dir = %s\n" % ldir)
        n.start_agent(["--conf", conf])
        wid = stream_window(c, 10)
        c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=90)
        c.use(lead)
        # Scheduled, so stored (a job nobody scheduled is the leader's
        # alone): its agent writes the window into the job's config.
        code, w = c.http("POST", "/v1/jobs/%s/windows" % LJOB, {
            "start_step": 10 ** 6, "stop_step": 10 ** 6 + 5})
        check(code == 201, "the legacy job's window: %s %s" % (code, w))
        wait_for(lambda: (lambda r: r[0] == 200 and r[1].get("legacy", {})
                          .get("dialects") == {"mindspore-2.4": 1} and
                          r[1]["legacy"]["windows"])(
            c.http("GET", "/v1/jobs/%s" % LJOB)), 30,
            "the leader's summary of the legacy job")

        def judged():
            code, s = c.http("GET", "/v1/jobs/%s/stragglers" % JOB)
            return s if code == 200 and s.get("ranks_judged") == 4 and [
                w for w in s.get("worst_ranks", []) if w["rank"] == 3 and
                "lag" in w["reasons"]] else None
        s = wait_for(judged, 60, "the leader judging rank 3 a straggler")
        for p in ranks:
            p.signal(signal.SIGSTOP)
        log("rank 3 judged a straggler by the leader (lag %s); the ranks "
            "held still" % [w["lag"] for w in s["worst_ranks"]
                            if w["rank"] == 3])
        fport = c.coords[fol][2]
        seen = same_reads(c, lead, fol, READSUM, without_updated)
        summ, strag, nodes, lsumm = [seen[p] for p in READSUM]
        check(lsumm["legacy"]["nodes"] == 1 and lsumm["legacy"]["dialects"] ==
              {"mindspore-2.4": 1} and lsumm["legacy"]["windows"][0]["id"] ==
              w["id"], "the follower's legacy job: %s" % lsumm)
        worst = [w for w in strag["worst_ranks"] if w["rank"] == 3]
        check(worst and "lag" in worst[0]["reasons"] and
              worst[0]["node"] == "n1" and strag["ranks_judged"] == 4,
              "the follower's stragglers: %s" % strag)
        check([w["rank"] for w in summ["stragglers"]["worst_ranks"]] ==
              [w["rank"] for w in strag["worst_ranks"]][:10] and
              summ["stragglers"]["worst_nodes"][0]["node"] == "n1",
              "the follower's summary's stragglers: %s" % summ["stragglers"])
        f = nodes["fields"]
        rows = {r[f.index("node")]: r for r in nodes["nodes"]}
        check(rows["n1"][f.index("stragglers")] >= 1 and
              rows["n0"][f.index("stragglers")] == 0 and
              nodes["median_step"] >= 0, "the follower's job nodes: %s" %
              nodes)
        log("the follower names rank 3 on n1 a straggler (summary, "
            "/stragglers, the heat map's nodes)")
        modules = npm_ci(os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "..", "browser"), "test-browser")
        facts = dict(url="http://127.0.0.1:%d" % fport, job=JOB,
                     chromium="/usr/bin/chromium", straggler=3, node="n1",
                     done=wid, shot=os.path.join(c.dir, "follower.png"))
        r = subprocess.run(["node", os.path.join(os.path.dirname(
            os.path.abspath(__file__)), "..", "browser", "ui_click.js"),
            "follower"], input=json.dumps(facts), timeout=180,
            env=dict(os.environ, NODE_PATH=modules), capture_output=True,
            text=True)
        check(r.returncode == 0, "the follower's page: %s%s (screenshot "
              "%s)" % (r.stderr, r.stdout, facts["shot"]))
        log("the follower's page: %s" % r.stdout.strip())
        for p in ranks:
            p.signal(signal.SIGCONT)


def etcd_put(c, key, value):
    """Puts key = value in etcd as a client would (its JSON gateway)."""
    def b64(s):
        return base64.b64encode(s.encode()).decode()
    req = urllib.request.Request(
        c.etcd.urls()[0] + "/v3/kv/put",
        json.dumps({"key": b64(key), "value": b64(value)}).encode(),
        {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        r.read()


def scenario_heldhello():
    with HaCluster("etcd-heldhello") as c:
        lead, nodes = agents_on_leader(c, 2)
        # An agent that lost its leader dials the next address of its list;
        # the one after stops, so that the next one takes the lead.
        nxt, other = (lead + 1) % 3, (lead + 2) % 3
        wait_for(lambda: c.metric(nxt, "dynprof_coordinator_leader_watched")
                 == 1, 30, "coordinator%d watching" % nxt)
        c.coords[other][0].signal(signal.SIGSTOP)
        marks = [os.path.getsize(n.agent.logpath) for n in nodes]
        p = c.coords[lead][0]
        log("coordinator%d SIGSTOPped; SIGKILL leader coordinator%d"
            % (other, lead))
        p.kill9()
        new = c.find_leader(timeout=10 * TTL + 10, exclude=(lead, other))
        check(new == nxt, "coordinator%d leads, not %d" % (new, nxt))
        wait_for(lambda: c.metric(new, "dynprof_agents_connected") == 2, 60,
                 "every agent back on the new leader")
        c.coords[other][0].signal(signal.SIGCONT)
        counts = [not_leader_answers(n, m) for n, m in zip(nodes, marks)]
        welcomed = c.metric(new, "dynprof_coordinator_hellos_held_welcomed"
                            "_total")
        log("coordinator%d leads; hellos it held and welcomed: %s; "
            "ERROR_NOT_LEADER answers per agent: %s" % (new, welcomed,
                                                        counts))
        check(counts == [0, 0] and welcomed == 2, "agents held at the new "
              "leader were answered ERROR_NOT_LEADER %s, %s welcomed from "
              "the hold" % (counts, welcomed))
        c.wait_ranks(JOB, 2, min_step=5)


def scenario_sigstop():
    with HaCluster("etcd-sigstop") as c:
        lead = c.start_coordinators(2)
        fol = 1 - lead
        code, _ = post_window(c, lead, 100, 110)
        check(code == 201, "first window: %s" % code)
        old = c.coords[lead][0]
        log("SIGSTOP leader coordinator%d" % lead)
        old.signal(signal.SIGSTOP)
        try:
            new = c.find_leader(timeout=TTL + 5, exclude=(lead,))
            check(new == fol, "leader %d" % new)
            code, _ = post_window(c, fol, 200, 210)
            check(code == 201, "the new leader's window: %s" % code)
        finally:
            old.signal(signal.SIGCONT)
        # Woken, it still believes it leads until etcd says otherwise.
        code, body = post_window(c, lead, 300, 310)
        log("the old leader, woken, answered a write with %s %s" % (code, body))
        check(code in (307, 503), "the deposed leader took a write: %s %s" % (
            code, body))
        wait_for(lambda: c.role(lead) == "follower", 10 * TTL + 10,
                 "the old leader stepped down")
        check(c.metric(lead, "dynprof_coordinator_stepdowns_total") == 1,
              "stepdowns: %s" % c.metric(lead,
                                         "dynprof_coordinator_stepdowns_total"))
        c.use(fol)
        st = c.status(JOB)
        steps = sorted((w["start_step"], w["stop_step"]) for w in st["windows"])
        check(steps == [(100, 110), (200, 210)], "windows %s" % steps)
        log("the paused leader wrote nothing and stepped down")


def scenario_etcdstop():
    with HaCluster("etcd-etcdstop") as c:
        # A lease that outlives the pause: the leader stays the leader.
        lead = c.start_coordinators(2, ttl=10)
        fol = 1 - lead
        wid, a, b = two_nodes_window(c, 30)
        wait_started(c, wid)
        hb = 0.5                # --heartbeat-ms
        log("SIGSTOP etcd for %.1f s; window %d (%d-%d) stops meanwhile" % (
            4 * hb, wid, a, b))
        etcd_proc = c.etcd.procs[0]
        etcd_proc.send_signal(signal.SIGSTOP)
        slowest, asked = 0.0, 0
        try:
            t_end = time.monotonic() + 4 * hb
            while time.monotonic() < t_end:
                for i, role in ((lead, "leader"), (fol, "follower")):
                    c.use(i)
                    t0 = time.monotonic()
                    code, body = c.http("GET", "/healthz", timeout=5)
                    slowest = max(slowest, time.monotonic() - t0)
                    asked += 1
                    check(code == 200 and body.get("role") == role,
                          "/healthz of the %s with etcd stopped: %s %s" % (
                              role, code, body))
                time.sleep(0.05)
        finally:
            etcd_proc.send_signal(signal.SIGCONT)
        c.use(lead)
        log("etcd continued; /healthz of the leader and the follower "
            "answered %d times meanwhile, slowest %.0f ms" % (
                asked, slowest * 1000))
        check(slowest < 0.25, "/healthz took %.0f ms with etcd stopped" % (
            slowest * 1000))
        each_once(c, wid, a, b)
        text = c.coords[lead][0].output()
        for bad in ("silent for 3 heartbeat", "cannot store events",
                    "closing"):
            check(bad not in text, "the coordinator logged %r:\n%s" % (
                bad, "\n".join(line for line in text.splitlines()
                               if bad in line)[:2000]))
        log("no agent closed; every start and stop of window %d once" % wid)

        # A change whose answer waits for its commit, its client gone
        # before: the commit lands, the answer goes nowhere, the leader
        # serves on.
        etcd_proc.send_signal(signal.SIGSTOP)
        try:
            body = json.dumps({"start_step": b + 100,
                               "stop_step": b + 110}).encode()
            sk = socket.create_connection(("127.0.0.1", c.http_port), 5)
            sk.sendall(b"POST /v1/jobs/%s/windows HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (
                           JOB.encode(), len(body), body))
            time.sleep(0.5)
            sk.close()
            time.sleep(0.5)
        finally:
            etcd_proc.send_signal(signal.SIGCONT)

        def landed():
            st = c.status(JOB)
            return st if any(w["start_step"] == b + 100
                             for w in st["windows"]) else None
        st = wait_for(landed, 30, "the window of the client gone")
        check(sum(1 for w in st["windows"] if w["start_step"] == b + 100)
              == 1, "windows %s" % st["windows"])
        check(c.coords[lead][0].alive(), "the leader exited")
        log("a change whose client left before its commit: landed once, "
            "the leader serves on")


def scenario_quorum():
    with HaCluster("etcd-quorum", etcd_members=3) as c:
        lead = c.start_coordinators(2)
        code, _ = post_window(c, lead, 100, 110)
        check(code == 201, "first window: %s" % code)
        log("killing etcd member 0")
        c.etcd.stop_member(0)
        # If it was etcd's raft leader, the other two elect one first
        # (--election-timeout 500 ms): writes may fail that long, then go on
        # (a deadline far past it, for a loaded machine).
        # Every answer to a POST of the 200, 300 and 400 windows: a 201 must
        # be in the state after recovery, any other answer may or may not
        # be (etcd may commit a proposal its client gave up on).
        answers = {200: [], 300: [], 400: []}

        def post(i, start):
            code, body = post_window(c, i, start, start + 10)
            answers[start].append(code)
            return code, body
        t0 = time.monotonic()
        code, body = wait_for(lambda: (lambda r: r if r[0] != 503 else None)(
            post(lead, 200)), 15, "a write with one member lost",
            interval=0.1)
        check(code == 201, "one member lost: %s %s" % (code, body))
        check(c.find_leader(timeout=TTL + 5) == lead, "the leader changed")
        log("one member lost: writes go on after %.2f s, same leader; "
            "killing member 1 (no quorum)" % (time.monotonic() - t0))
        c.etcd.stop_member(1)

        def refused():
            code, body = post(lead, 300)
            return (code, body) if code != 201 else None
        code, body = wait_for(refused, 10, "a write refused")
        check(code == 503 and "store unavailable" in body.get("error", ""),
              "without quorum: %s %s" % (code, body))
        refusal = body
        # The first write etcd stopped answering is held, then refused as
        # not committed yet: the leader's model has it, and the commit
        # stays queued until etcd answers.  Any later one is refused at
        # once, and nowhere.
        maybe = "may yet be committed" in refusal["error"]
        c.use(lead)
        code, st = c.http("GET", "/v1/jobs/%s" % JOB)
        check(code == 200 and sorted(w["start_step"] for w in st["windows"])
              == ([100, 200, 300] if maybe else [100, 200]),
              "reads without quorum: %s %s" % (code, st))
        # Served without waiting on etcd: it is asked once a second, for at
        # most 250 ms (ETCD_PROBE_TIMEOUT_MS), the loop free between.  A read
        # that waited on etcd would wait out its request's timeout: the
        # median of 10 stays far below 1 s, which a loaded machine may
        # exceed for one read, not for most.
        took = []
        for _ in range(10):
            t0 = time.monotonic()
            code, _ = c.http("GET", "/v1/jobs/%s" % JOB)
            took.append(time.monotonic() - t0)
            check(code == 200, "a read without quorum: %s" % code)
            time.sleep(0.1)
        took.sort()
        median = (took[4] + took[5]) / 2
        check(median < 1.0, "reads without quorum took %s s" % ", ".join(
            "%.2f" % t for t in took))
        log("no quorum: 503 %s; reads served (median of 10 %.0f ms, slowest "
            "%.0f ms)" % (body["error"], median * 1000, took[-1] * 1000))
        c.etcd.start_member(0)
        c.etcd.start_member(1)
        c.etcd.wait_healthy()

        def accepted():
            i = c.find_leader(timeout=TTL + 5)
            code, body = post(i, 400)
            return (i, body) if code == 201 else None
        i, body = wait_for(accepted, 30, "a write accepted again", interval=0.3)
        c.use(i)
        st = c.status(JOB)
        steps = sorted(w["start_step"] for w in st["windows"])
        # What etcd committed decides, not what the coordinator said of it:
        # the leader holds exactly the windows etcd holds, each once.
        ids = sorted(w["id"] for w in st["windows"])
        held = sorted(int(k.rsplit("/", 1)[1]) for k in c.etcd.keys(
            "%swindows/%s/" % (c.prefix, JOB)))
        check(ids == held, "the leader's windows %s, etcd holds %s" % (
            ids, held))
        check(len(set(ids)) == len(ids), "window ids reused: %s" % ids)
        check(steps.count(100) == 1 and set(steps) <= {100, 200, 300, 400},
              "windows after recovery: %s" % steps)
        for start, got in sorted(answers.items()):
            check(got.count(201) <= steps.count(start) <= len(got),
                  "window %d: %d in the state, answers %s" % (
                      start, steps.count(start), got))
        log("quorum back: writes accepted, state whole (%s)" % steps)


def start_flags(c, name, flags):
    """Starts a coordinator with flags; returns (Proc, exit code or None)."""
    p = Proc(name, [binary(COORDINATOR), "--listen", "127.0.0.1:0",
                    "--http", "127.0.0.1:0", "--state-dir",
                    os.path.join(c.dir, name), "--ready-file",
                    os.path.join(c.dir, name + ".ready")] + flags,
             os.path.join(c.dir, name + ".log"))
    c.procs.append(p.start())
    try:
        rc = p.wait(2)
        p.killed = True         # its exit is what the test checks
        return p, rc
    except subprocess.TimeoutExpired:
        return p, None


def start_serving(c, name, flags):
    """Starts a coordinator that must keep running; talks to it from now on.
    Returns its /healthz role."""
    p, rc = start_flags(c, name, flags)
    check(rc is None, "refused %s: %s" % (flags, p.output()[-500:]))
    kv = wait_for(lambda: c._ports(p, os.path.join(c.dir, name + ".ready")),
                  20, "coordinator %s ready" % name)
    c.http_port = int(kv["http_port"])
    code, body = c.http("GET", "/healthz")
    check(code == 200, "%s: /healthz %s %s" % (name, code, body))
    return body.get("role")


def scenario_flags():
    with HaCluster("etcd-flags") as c:
        many = ",".join("http://127.0.0.1:%d" % (1000 + i) for i in range(17))
        bad = [
            (["--etcd-endpoints", "127.0.0.1:2379"], "--etcd-endpoints"),
            (["--etcd-endpoints", many], "more than 16 endpoints"),
            (["--etcd-endpoints", "http://127.0.0.1:1", "--etcd-prefix",
              "/dynprof"], "must end with '/'"),
            (["--etcd-prefix", "/" + "p" * 127 + "/"], "--etcd-prefix"),
            (["--etcd-lease-ttl", "1"], "expected 2 to 300 seconds"),
            (["--etcd-lease-ttl", "301"], "expected 2 to 300 seconds"),
            (["--advertise-agent", "nocolon"], "--advertise-agent"),
            (["--advertise-http", "ftp://x:1"], "--advertise-http"),
            (["--etcd-max-txn-ops", "127"], "expected 128 to 65536"),
            (["--etcd-max-txn-ops", "65537"], "expected 128 to 65536"),
            (["--etcd-cacert", "/nonexistent"], "--etcd-cacert"),
        ]
        # A wildcard listener names no address to advertise (exit 2, at
        # start): --advertise-agent is needed.
        wild = ["--etcd-endpoints", "http://127.0.0.1:1", "--insecure",
                "--listen", "0.0.0.0:0"]
        p, rc = start_flags(c, "wild", wild)
        check(rc == 2 and "give --advertise-agent" in p.output(),
              "%s: exit %s:\n%s" % (wild, rc, p.output()[-500:]))
        p, rc = start_flags(c, "wildok", wild + ["--advertise-agent",
                                                 "10.0.0.1:7878"])
        check(rc is None, "refused %s: %s" % (wild, p.output()[-500:]))
        for i, (flags, what) in enumerate(bad):
            p, rc = start_flags(c, "bad%d" % i, flags)
            check(rc == 1 and what in p.output(),
                  "%s: exit %s, want 1 and %r:\n%s" % (flags, rc, what,
                                                       p.output()[-500:]))
        # The limits are taken; with no etcd answering, it follows nobody.
        ok = ["--etcd-endpoints", ",".join(many.split(",")[:16]),
              "--etcd-lease-ttl", "300", "--etcd-prefix",
              "/" + "p" * 125 + "/", "--etcd-max-txn-ops", "65536"]
        role = start_serving(c, "ok", ok)
        check(role == "follower", "no etcd: role %s" % role)
        code, body = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                            {"start_step": 10, "stop_step": 20})
        check(code == 503 and "no leader is known" in body.get("error", ""),
              "no etcd: POST %s %s" % (code, body))
        p, rc = start_flags(c, "ttl2", ["--etcd-endpoints",
                                        "http://127.0.0.1:1",
                                        "--etcd-lease-ttl", "2"])
        check(rc is None, "refused --etcd-lease-ttl 2: %s" % p.output()[-500:])
        log("bad etcd flags refused by name; limits taken; no etcd: 503")


def scenario_tls():
    with HaCluster("etcd-tls") as c:
        certs = os.path.join(c.dir, "certs")
        mk = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "..", "deploy", "tls", "mkcerts.sh")
        r = subprocess.run(["sh", mk, "-o", certs, "-c", "127.0.0.1",
                            "coord"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        check(r.returncode == 0, "mkcerts.sh: %s" % r.stdout)
        etcd.make_server_cert(certs)
        c.etcd = etcd.EtcdCluster(1, name="etcd-tls", tls=certs, client="coord")
        c.cleanups.append(c.etcd.close)
        c.etcd.start()
        tls = ["--etcd-endpoints", c.etcd.endpoints, "--etcd-lease-ttl",
               str(TTL), "--etcd-cacert", os.path.join(certs, "ca.crt")]
        cert = ["--etcd-cert", os.path.join(certs, "coord.crt"),
                "--etcd-key", os.path.join(certs, "coord.key")]
        p, rc = start_flags(c, "half", tls + cert[:2])
        check(rc == 2 and "--etcd-cert and --etcd-key go together" in
              p.output(), "--etcd-cert without --etcd-key: exit %s" % rc)
        role = start_serving(c, "good", tls + cert)
        check(role == "leader", "over https: role %s" % role)
        code, body = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                            {"start_step": 10, "stop_step": 20})
        check(code == 201, "a write over https: %s %s" % (code, body))
        role = start_serving(c, "nocert", tls)
        check(role == "follower", "without a client certificate: role %s"
              % role)
        code, body = c.http("GET", "/v1/jobs")
        check(code == 503, "without a client certificate, no leader known: "
              "%s %s" % (code, body))
        log("etcd over https with client certificates; none: no etcd")


def scenario_ctl():
    import re
    with HaCluster("etcd-ctl") as c:
        lead = c.start_coordinators(3)
        urls = lambda first: ",".join(  # noqa: E731
            ["http://127.0.0.1:%d" % c.coords[first][2]] +
            ["http://127.0.0.1:%d" % h for i, (_, _, h) in
             enumerate(c.coords) if i != first])
        old = c.coords[lead][0]
        old.signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            r = ctl(c, urls(lead), "jobs")
            took = time.monotonic() - t0
        finally:
            old.signal(signal.SIGCONT)
        check(r.returncode == 0, "jobs past a hung leader: %s" % r.stdout)
        log("a read past the hung leader answered in %.2f s" % took)
        check(took < 9.0, "a read past the hung leader took %.2f s" % took)
        lead = c.find_leader(timeout=TTL + 5)
        two_nodes_window(c, None)
        env = dict(os.environ)
        env["DYNPROF_COORDINATOR"] = urls(lead)
        outp = os.path.join(c.dir, "follow.out")
        tracep = os.path.join(c.dir, "trace.out")
        with open(outp, "w") as out:
            fol = subprocess.Popen([binary(CTL), "status", JOB, "--follow"],
                                   env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
        with open(tracep, "w") as out:
            tr = subprocess.Popen([binary(CTL), "trace", JOB, "--in", "30",
                                   "--steps", "61", "--wait", "--timeout",
                                   "90"], env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
        try:
            m = wait_for(lambda: re.search(r"window (\d+): steps (\d+)-(\d+)",
                                           open(tracep).read()), 10,
                         "trace --wait's window")
            wid, a, b = (int(x) for x in m.groups())
            def started():
                st = c.status(JOB)
                return all(events_of(r, "started", wid) for r in st["ranks"])
            wait_for(started, 30, "every rank started window %d" % wid,
                     interval=0.1)
            # The follower sleeps through the failover and the window's
            # end: the new leader's stream has what it missed.
            fol.send_signal(signal.SIGSTOP)
            tr.send_signal(signal.SIGSTOP)
            p = c.coords[lead][0]
            log("SIGKILL leader coordinator%d during window %d (%d-%d)" % (
                lead, wid, a, b))
            p.kill9()
            t0 = time.monotonic()
            r = ctl(c, urls(lead), "jobs")
            log("dynprofctl jobs, the dead leader first: rc %d after %.2f s"
                % (r.returncode, time.monotonic() - t0))
            check(r.returncode == 0, "jobs after the kill: %s" % r.stdout)
            c.find_leader(timeout=TTL + 5, exclude=(lead,))
            c.wait_window_done(JOB, wid, [0, 1, 2, 3], timeout=60)
            fol.send_signal(signal.SIGCONT)
            tr.send_signal(signal.SIGCONT)
            # trace --wait reads the state again and decides on it.
            rc = tr.wait(60)
            check(rc == 0 and "window %d: all 4 targeted ranks stopped" % wid
                  in open(tracep).read(), "trace --wait across the failover:"
                  " rc %s" % rc)
            log("trace --wait saw window %d finish across the failover" % wid)
            done = re.compile(r"(window %d \[%d,%d\]: done|^ +%d +%d-%d +done)"
                              % (wid, a, b, wid, a, b), re.M)
            wait_for(lambda: done.search(open(outp).read()), 20,
                     "status --follow showing window %d done" % wid)
            said = open(outp).read()
            check("no longer kept" not in said, "status --follow lost "
                  "events across the failover")
            for rk in range(4):
                for kind in ("started", "stopped"):
                    n = len(re.findall(r"rank %d on n\d: %s window %d at step"
                                       % (rk, kind, wid), said))
                    check(n == 1, "status --follow: rank %d %s window %d "
                          "%d times" % (rk, kind, wid, n))
            log("status --follow showed window %d done across the failover,"
                " each start and stop once" % wid)
        finally:
            for proc in (fol, tr):
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
            log("status --follow said:\n%s" % open(outp).read()[-3000:])
            log("trace --wait said:\n%s" % open(tracep).read()[-2000:])


def scenario_forget():
    with HaCluster("etcd-forget") as c:
        lead = c.start_coordinators(2)
        wid, a, b = two_nodes_window(c, 4)
        each_once(c, wid, a, b)
        mine = lambda: [k for k in c.etcd.keys(c.prefix)  # noqa: E731
                        if "/%s/" % JOB in k or k.endswith("/" + JOB)]
        check(mine(), "nothing of %s in etcd before forget" % JOB)
        r = ctl(c, c.url(), "forget", JOB)
        check(r.returncode == 0, "forget: %d %s" % (r.returncode, r.stdout))
        wait_for(lambda: not mine(), 10, "no key of %s in etcd" % JOB)
        log("every key of %s left etcd" % JOB)
        c.coords[lead][0].kill9()
        c.find_leader(timeout=TTL + 5, exclude=(lead,))
        code, body = c.http("GET", "/v1/jobs/%s" % JOB)
        # Its agents subscribe again (ranks still run): a job nobody
        # scheduled, with none of the forgotten windows or events.
        check(code == 404 or (body.get("generation") == 0 and
                              not body.get("windows")),
              "the new leader brought %s back: %s %s" % (JOB, code, body))
        st = c.wait_ranks(JOB, 4, min_step=b + 1)
        check(all(not r.get("events") for r in st["ranks"]),
              "forgotten events came back: %s" % st["ranks"])
        top = st["progress"]["max_step"]
        w = c.add_window(JOB, {"start_step": top + 30, "stop_step": top + 32})
        check(w["id"] > wid, "window %d after forgetting window %d: the ranks "
              "ran that id" % (w["id"], wid))
        c.wait_window_done(JOB, w["id"], [0, 1, 2, 3], timeout=60)
        log("a window after the forget reached every rank")


def compared(c, wid, n):
    """Until window wid's comparison counts n ranks compared; returns it."""
    def cond():
        code, body = c.http("GET", "/v1/jobs/%s/windows/%d/compare" %
                            (JOB, wid))
        check(code == 200, "compare: %s %s" % (code, body))
        return body if body["counts"]["compared"] == n else None
    return wait_for(cond, 90, "%d ranks compared" % n)


def scenario_compare():
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return skip("no torch in %s" % PYTHON)
    with HaCluster("etcd-compare") as c:
        lead = c.start_coordinators(2)
        n = c.node("n0", coord_addr=c.agent_addrs())
        n.start_agent(extra=["--trace-store", c.trace_store(),
                             "--trace-settle", "2"])
        procs = start_ddp_ranks(c, [n] * 3, JOB, 60, slow={1: (25.0, 1)},
                                step_ms=10)
        c.wait_ranks(JOB, 3, timeout=120, min_step=2)
        w = c.add_window(JOB, {"in_steps": 4, "steps": 6})
        c.wait_window_done(JOB, w["id"], [0, 1, 2], timeout=120)
        body = compared(c, w["id"], 3)
        st = body["straggler"]
        log("straggler: %s" % st)
        check(body["synchronous"] and st is not None and st["rank"] == 1 and
              st["by"] == "compute" and st["waited_in"] == "gloo:all_reduce",
              "compare: %s" % json.dumps(body)[:1500])
        c.coords[lead][0].kill9()
        c.find_leader(timeout=TTL + 5, exclude=(lead,))
        again = compared(c, w["id"], 3)
        check(again["ranks"] == body["ranks"] and again["straggler"] == st,
              "the new leader's comparison: %s" % json.dumps(again)[:1500])
        log("the new leader, loaded from etcd, compares the same")
        for p in procs:
            p.wait(120)
            check(p.p.returncode == 0, "%s: %s" % (p.name,
                                                   p.output()[-2000:]))


SCENARIOS = {
    "redirect": scenario_redirect,
    "failover": scenario_failover,
    "notleader": scenario_notleader,
    "burst": scenario_burst,
    "stream": scenario_stream,
    "replica": scenario_replica,
    "takeover": scenario_takeover,
    "reads": scenario_reads,
    "readsum": scenario_readsum,
    "copy": scenario_copy,
    "unscheduled": scenario_unscheduled,
    "heldhello": scenario_heldhello,
    "sigstop": scenario_sigstop,
    "compact": scenario_compact,
    "etcdstop": scenario_etcdstop,
    "quorum": scenario_quorum,
    "flags": scenario_flags,
    "tls": scenario_tls,
    "ctl": scenario_ctl,
    "forget": scenario_forget,
    "compare": scenario_compare,
}


def test():
    if not os.access(etcd.ETCD, os.X_OK):
        print("FAIL: %s is not installed (make deps-test, or scripts/deps.sh: "
              "etcd-server)" % etcd.ETCD)
        return 1
    return SCENARIOS[sys.argv[1]]()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.stderr.write("usage: test_etcd.py %s\n" % "|".join(SCENARIOS))
        sys.exit(2)
    main(test)
