"""A local dynprof cluster for the end-to-end tests: the real coordinator, agents
and dynprof-train-sim ranks, each node with its own socket, segment directory and
output root, everything under one temporary directory.  A rank can also run in
Python (py_rank.py over the dynprof binding in lib/python, same flags and trace).

Standard library only.  Every wait is a poll with a deadline; Cluster.close()
(also on failure, through the context manager) stops every process it started
and removes the directory (kept with DYNPROF_E2E_KEEP=1).
"""

import datetime
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77  # CTest SKIP_RETURN_CODE

# What a sanitizer prints when it finds something (a leak, a bad access, an
# undefined behaviour): in a daemon's log it fails the test, whatever the
# daemon's exit status.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:")


def sanitizer_report(text):
    """The first line of text a sanitizer wrote, or None."""
    for line in text.splitlines():
        if any(m in line for m in SANITIZER_MARKS):
            return line
    return None


def skip(why):
    """A test's return for what this machine does not offer: SKIP (77, shown
    as skipped by CTest) for a user that is not root; as root the machine
    should offer it (CI and make test run as root), so FAIL (1) unless
    DYNPROF_E2E_ALLOW_SKIP=1."""
    if os.geteuid() == 0 and os.environ.get("DYNPROF_E2E_ALLOW_SKIP") != "1":
        print("FAIL: running as root, yet %s (DYNPROF_E2E_ALLOW_SKIP=1 makes "
              "it a skip)" % why)
        return 1
    print("SKIP: %s" % why)
    return SKIP


def build_dir():
    d = os.environ.get("DYNPROF_BUILD_DIR")
    if not d:
        d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                         "build")
    return os.path.abspath(d)


def binary(rel):
    path = os.path.join(build_dir(), rel)
    if not os.access(path, os.X_OK):
        raise RuntimeError("missing binary %s (build first)" % path)
    return path


COORDINATOR = "server/dynprof-coordinator"
AGENT = "agent/dynprof-agent"
CTL = "ctl/dynprofctl"
TRAIN_SIM = "examples/dynprof-train-sim"
LIBRARY = "lib/libdynprof.so"
PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
PY_RANK = os.path.join(HERE, "py_rank.py")
PY_BINDING = os.path.join(HERE, "..", "..", "lib", "python")


def python_env(env):
    """env for a Python rank: the binding on PYTHONPATH, this build's library,
    and (sanitizer builds: e2e.cmake sets DYNPROF_E2E_PY_PRELOAD) the sanitizer
    runtimes preloaded into the interpreter, which is not built with them."""
    env["PYTHONPATH"] = os.path.abspath(PY_BINDING)
    env["DYNPROF_LIBRARY"] = os.path.join(build_dir(), LIBRARY)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    pre = os.environ.get("DYNPROF_E2E_PY_PRELOAD")
    if pre:
        env["LD_PRELOAD"] = pre
        # The interpreter's own allocations are not ours to leak-check.
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


class Failure(Exception):
    pass


def npm_ci(src, name):
    """The packages pinned in src's package.json and package-lock.json,
    installed by npm ci into build_dir()/name once per build tree (again when
    the lock file changes); returns the node_modules directory."""
    where = os.path.join(build_dir(), name)
    os.makedirs(where, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(src, f), where)
    lock = os.path.join(where, "package-lock.json")
    stamp = os.path.join(where, "node_modules", ".dynprof-lock")
    if not (os.path.exists(stamp) and open(stamp).read() == open(lock).read()):
        log("npm ci in %s" % where)
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund",
                            "--loglevel=error"], cwd=where, timeout=300,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure("npm ci failed (the npm registry is reachable "
                          "here and in CI):\n%s" % (r.stdout + r.stderr))
        shutil.copy(lock, stamp)
    return os.path.join(where, "node_modules")


def log(msg):
    sys.stdout.write("[%8.3f] %s\n" % (time.monotonic() - _T0, msg))
    sys.stdout.flush()


_T0 = time.monotonic()


def wait_for(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a true value (returned) or timeout s pass."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = cond()
        except (OSError, ValueError, KeyError, urllib.error.URLError) as e:
            v, last = None, e
        if v:
            return v
        if time.monotonic() > deadline:
            raise Failure("timed out after %gs waiting for %s%s" %
                          (timeout, what, " (last error: %s)" % last if last else ""))
        time.sleep(interval)


class Proc:
    def __init__(self, name, argv, logpath, env=None, netns=None, wrap=()):
        self.name = name
        self.argv = list(wrap) + list(argv)
        self.logpath = logpath
        self.env = env
        self.netns = netns
        self.p = None
        self.killed = False     # SIGKILLed or SIGSTOPped on purpose

    def start(self):
        argv = self.argv
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns] + argv
        logf = open(self.logpath, "ab")
        self.p = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=self.env,
                                  start_new_session=True)
        logf.close()
        return self

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def signal(self, sig):
        if self.alive():
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass

    def kill9(self):
        self.killed = True
        self.signal(signal.SIGKILL)
        self.p.wait(10)

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after timeout; returns the exit code."""
        if self.p is None:
            return None
        if self.alive():
            self.signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.p.wait(10)
        return self.p.returncode

    def wait(self, timeout):
        return self.p.wait(timeout)

    def output(self):
        try:
            with open(self.logpath, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


DDP_RANK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "ddp_rank.py")


def start_ddp_ranks(c, nodes, job, steps, slow=None, nice=0, step_ms=20):
    """Starts len(nodes) ranks of ddp_rank.py (real torch DDP over gloo,
    meeting through a FileStore in c.dir), rank r on nodes[r] with its
    agent's segments, socket and output root; slow: {rank: (factor, from
    step)}.  Returns the Procs, also in c.procs."""
    store = os.path.join(c.dir, "%s.store" % job)
    procs = []
    for r, n in enumerate(nodes):
        env = python_env(dict(os.environ))
        env["DYNPROF_SHM_DIR"] = n.shm
        env["DYNPROF_AGENT_SOCKET"] = n.sock
        env["DYNPROF_OUTPUT_ROOT"] = n.out
        f, at = (slow or {}).get(r, (1.0, 1))
        p = Proc("ddp-%s-%d" % (job, r), [
            PYTHON, DDP_RANK, "--job", job, "--rank", str(r), "--world",
            str(len(nodes)), "--store", store, "--steps", str(steps),
            "--step-ms", str(step_ms), "--slow", str(f), "--slow-from",
            str(at), "--nice", str(nice)],
            os.path.join(n.dir, "%s-rank%d.log" % (job, r)), env=env)
        c.procs.append(p.start())
        procs.append(p)
    return procs


class Node:
    """One agent's node: its socket, segment directory and output root."""

    def __init__(self, cluster, name, netns=None, coord_addr=None):
        self.cluster = cluster
        self.name = name
        self.netns = netns
        self.dir = os.path.join(cluster.dir, name)
        self.shm = os.path.join(self.dir, "shm")
        self.sock = os.path.join(self.dir, "agent.sock")
        self.out = os.path.join(self.dir, "out")
        self.coord_addr = coord_addr
        self.agent = None
        self.ranks = {}
        for d in (self.dir, self.shm, self.out):
            os.makedirs(d, exist_ok=True)

    def start_agent(self, extra=(), wrap=()):
        """wrap: a command line prefix (unshare ...) to run it under."""
        ready = os.path.join(self.dir, "agent.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        addr = self.coord_addr or "127.0.0.1:%d" % self.cluster.agent_port
        self.agent = Proc("agent-" + self.name, [
            binary(AGENT), "--coordinator", addr, "--node", self.name,
            "--socket", self.sock, "--shm-dir", self.shm,
            "--sample-interval", "100", "--grace", "600",
            "--ready-file", ready] + list(extra),
            os.path.join(self.dir, "agent.log"), netns=self.netns, wrap=wrap)
        self.cluster.procs.append(self.agent.start())
        wait_for(lambda: self._ready(ready), 20, "agent %s ready" % self.name)
        return self.agent

    def _ready(self, path):
        if not self.agent.alive():
            raise Failure("agent %s exited with %s:\n%s" % (
                self.name, self.agent.p.returncode, self.agent.output()[-2000:]))
        return os.path.exists(path) and "socket=" in open(path).read()

    def legacy_dir(self):
        """A new directory in the node's for its agent's --legacy-dir."""
        ldir = os.path.join(self.dir, "legacy")
        os.mkdir(ldir)
        return ldir

    def start_rank(self, job, rank, rate=50, first_step=None, max_steps=None,
                   python=False, wrap=(), labels=None, poll_ms=None):
        """dynprof-train-sim, or with python=True its twin py_rank.py; wrap as
        in start_agent(); labels (a text) as DYNPROF_LABELS; poll_ms: no
        steps, polls every poll_ms (time windows only)."""
        env = dict(os.environ)
        if labels is not None:
            env["DYNPROF_LABELS"] = labels
        env["DYNPROF_SHM_DIR"] = self.shm
        env["DYNPROF_AGENT_SOCKET"] = self.sock
        env["DYNPROF_OUTPUT_ROOT"] = self.out
        if python:
            python_env(env)
            prog = [PYTHON, PY_RANK]
        else:
            prog = [binary(TRAIN_SIM)]
        argv = prog + ["--job", job, "--rank", str(rank),
                       "--steps-per-sec", str(rate)]
        if first_step is not None:
            argv += ["--first-step", str(first_step)]
        if max_steps is not None:
            argv += ["--max-steps", str(max_steps)]
        if poll_ms is not None:
            argv += ["--poll-ms", str(poll_ms)]
        p = Proc(("pyrank%d" if python else "rank%d") % rank, argv,
                 os.path.join(self.dir, "rank%d.log" % rank), env=env,
                 netns=self.netns, wrap=wrap)
        self.cluster.procs.append(p.start())
        self.ranks[rank] = p
        return p

    def trace(self, rank, start, stop):
        """The rank's trace.json for window [start, stop], or None."""
        path = os.path.join(self.out, "rank%d_start%d_stop%d" % (rank, start, stop),
                            "trace.json")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


class Cluster:
    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="dynprof-e2e-%s-" % name)
        self.state = os.path.join(self.dir, "state")
        os.makedirs(self.state)
        self.procs = []
        self.nodes = {}
        self.coord = None
        self.agent_port = 0
        self.http_port = 0
        self.cleanups = []
        self.failed = False
        self._raised = False
        self.token = None   # sent as a bearer token by http()

    def __enter__(self):
        return self

    def __exit__(self, etype, e, tb):
        self._raised = etype is not None
        if etype is not None:
            self.failed = True
            self.dump()
        self.close()
        return False

    # --- processes -------------------------------------------------------

    def start_coordinator(self, heartbeat_ms=500, listen="127.0.0.1",
                          extra=()):
        ready = os.path.join(self.dir, "coord.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        self.coord = Proc("coordinator", [
            binary(COORDINATOR),
            "--listen", "%s:%d" % (listen, self.agent_port),
            "--http", "127.0.0.1:%d" % self.http_port,
            "--state-dir", self.state, "--heartbeat-ms", str(heartbeat_ms),
            "--ready-file", ready] + list(extra),
            os.path.join(self.dir, "coordinator.log"))
        self.procs.append(self.coord.start())

        def ready_ports():
            if not self.coord.alive():
                raise Failure("coordinator exited with %s:\n%s" % (
                    self.coord.p.returncode, self.coord.output()[-2000:]))
            kv = {}
            with open(ready) as f:
                for line in f:
                    k, _, v = line.strip().partition("=")
                    kv[k] = v
            if "agent_port" in kv and "http_port" in kv:
                return kv
            return None
        kv = wait_for(ready_ports, 20, "coordinator ready")
        self.agent_port = int(kv["agent_port"])
        self.http_port = int(kv["http_port"])
        return self.coord

    def node(self, name, netns=None, coord_addr=None):
        n = Node(self, name, netns=netns, coord_addr=coord_addr)
        self.nodes[name] = n
        return n

    def start_grid(self, job, nnodes, per_node, rate=50, python=()):
        """nnodes nodes n0, n1, ... with an agent each and per_node ranks each,
        numbered node by node, the ranks in python in Python (py_rank.py);
        returns (nodes, {rank: node})."""
        nodes = [self.node("n%d" % i) for i in range(nnodes)]
        where = {}
        for i, n in enumerate(nodes):
            n.start_agent()
            for k in range(per_node):
                rank = i * per_node + k
                n.start_rank(job, rank, rate=rate, python=rank in python)
                where[rank] = n
        return nodes, where

    def ctl(self, *args, timeout=60):
        env = dict(os.environ)
        env["DYNPROF_COORDINATOR"] = self.url()
        return subprocess.run([binary(CTL)] + list(args), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, universal_newlines=True)

    # --- admin API -------------------------------------------------------

    def url(self):
        return "http://127.0.0.1:%d" % self.http_port

    def http(self, method, path, body=None, timeout=10):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url() + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token is not None:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode(errors="replace")

    def status(self, job):
        """The job's summary, with its ranks (read page by page) under
        "ranks" and the nodes serving it under "nodes" as
        {"node", "state", "applied_generation"}.  The ranks are read first:
        the summary's progress is then at least as new as their steps (a
        node reports both in one Progress)."""
        ranks, after = [], -1
        while True:
            code, page = self.http("GET", "/v1/jobs/%s/ranks?limit=10000"
                                   "&after=%d" % (job, after))
            if code != 200:
                raise Failure("GET /v1/jobs/%s/ranks: %s %s" % (job, code,
                                                                page))
            ranks += page["ranks"]
            if page["next"] is None:
                break
            after = page["next"]
        code, body = self.http("GET", "/v1/jobs/%s" % job)
        if code != 200:
            raise Failure("GET /v1/jobs/%s: %s %s" % (job, code, body))
        body["ranks"] = ranks
        code, nodes = self.http("GET", "/v1/nodes")
        if code != 200:
            raise Failure("GET /v1/nodes: %s %s" % (code, nodes))
        body["nodes"] = [{"node": n["node"], "state": n["state"],
                          "applied_generation": n["jobs"][job]}
                         for n in nodes["nodes"] if job in n["jobs"]]
        return body

    def wait_ranks(self, job, n, timeout=30, min_step=1):
        """Until the status shows n ranks alive with a step >= min_step."""
        def cond():
            self.check_ranks_running()
            try:
                st = self.status(job)
            except Failure:
                return None
            alive = [r for r in st.get("ranks", [])
                     if r.get("state") not in ("gone", "unknown") and
                     (r.get("step") or 0) >= min_step]
            return st if len(alive) >= n else None
        return wait_for(cond, timeout, "%d ranks of %s reporting" % (n, job),
                        interval=0.1)

    def check_ranks_running(self):
        """Raises Failure when a rank exited with an error it was not told to."""
        for n in self.nodes.values():
            for p in n.ranks.values():
                if p.p.poll() not in (None, 0) and not p.killed:
                    raise Failure("%s on %s exited %s:\n%s" % (
                        p.name, n.name, p.p.returncode,
                        "\n".join(p.output().splitlines()[-10:])))

    def add_window(self, job, body, timeout=10):
        code, w = self.http("POST", "/v1/jobs/%s/windows" % job, body,
                            timeout=timeout)
        if code != 201:
            raise Failure("POST window %s: %s %s" % (body, code, w))
        log("window %s: steps %s-%s ranks '%s' (generation %s)" % (
            w.get("id"), w.get("start_step"), w.get("stop_step"),
            w.get("ranks", ""), w.get("generation")))
        return w

    def add_window_when_ready(self, job, body, timeout=30):
        """add_window(), tried again while the coordinator answers 409 (an
        agent not back yet, a rank's step not said yet); returns it."""
        def add():
            code, w = self.http("POST", "/v1/jobs/%s/windows" % job, body)
            check(code in (201, 409), "window: %s %s" % (code, w))
            return w if code == 201 else None
        return wait_for(add, timeout, "a window of %s" % job)

    def wait_rule_fired(self, job, timeout=60):
        """Waits until the job's first rule made a window; returns the rule."""
        def fired():
            code, r = self.http("GET", "/v1/jobs/%s/rules" % job)
            rl = r.get("rules", []) if code == 200 else []
            return rl[0] if rl and rl[0].get("last_window") else None
        return wait_for(fired, timeout, "the rule fired", interval=0.2)

    def wait_window_done(self, job, wid, ranks, timeout=60):
        """Until every rank in ranks has a stopped event for window wid."""
        def cond():
            st = self.status(job)
            by = {r["rank"]: r for r in st.get("ranks", [])}
            for rk in ranks:
                r = by.get(rk)
                if r is None or not [e for e in r.get("events", [])
                                     if e.get("kind") == "stopped" and
                                     e.get("window") == wid]:
                    return None
            return st
        return wait_for(cond, timeout, "window %d stopped on ranks %s" %
                        (wid, compact(ranks)), interval=0.2)

    def trace_store(self):
        """A new directory in the cluster's for the agents' --trace-store."""
        store = os.path.join(self.dir, "store")
        os.makedirs(store)
        return store

    def start_collecting(self, settle, more=(), coordinator=()):
        """The coordinator (with the flags coordinator) and node n0 with an
        agent collecting the ranks' traces into a new --trace-store, settle
        seconds after a window, and the flags more; returns the node, the
        store and the agent's flags (to start it again)."""
        self.start_coordinator(extra=coordinator)
        n = self.node("n0")
        store = self.trace_store()
        flags = ["--trace-store", store, "--trace-settle", str(settle)] + \
            list(more)
        n.start_agent(extra=flags)
        return n, store, flags

    def start_node_ranks(self, job, ranks, heartbeat_ms=500):
        """The coordinator and node n0 with an agent and ranks of job, 50
        steps a second; returns the node."""
        self.start_coordinator(heartbeat_ms=heartbeat_ms)
        n = self.node("n0")
        n.start_agent()
        for rank in ranks:
            n.start_rank(job, rank, rate=50)
        return n

    def wait_traces_indexed(self, job, wid, n, timeout, what):
        """Until the coordinator's traces index of window wid counts n
        ranks collected; returns the index."""
        def cond():
            code, body = self.http("GET", "/v1/jobs/%s/windows/%d/traces" %
                                   (job, wid))
            check(code == 200, "traces index: %s %s" % (code, body))
            return body if body["counts"]["collected"] == n else None
        return wait_for(cond, timeout, what)

    # --- teardown --------------------------------------------------------

    def dump(self):
        for p in self.procs:
            out = p.output()
            if out:
                sys.stdout.write("----- %s (%s) last lines -----\n%s\n" % (
                    p.name, p.logpath, "\n".join(out.splitlines()[-25:])))
        sys.stdout.flush()

    def close(self):
        bad = []
        for p in reversed(self.procs):
            try:
                rc = p.stop(timeout=5)
            except Exception as e:  # keep cleaning up
                log("stopping %s: %s" % (p.name, e))
                continue
            # SIGTERM is a clean stop for every one of them: exit 0.  Anything
            # else (a sanitizer report, a crash) fails a test that passed.
            if rc not in (0, None) and not p.killed:
                bad.append(p)
            elif sanitizer_report(p.output()):
                bad.append(p)
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:
                log("cleanup: %s" % e)
        if bad and not self.failed:
            self.failed = True
            for p in bad:
                sys.stdout.write("----- %s exited %s on SIGTERM%s -----\n%s\n" % (
                    p.name, p.p.returncode,
                    ", a sanitizer report" if sanitizer_report(p.output())
                    else "", "\n".join(p.output().splitlines()[-40:])))
        if os.environ.get("DYNPROF_E2E_KEEP") == "1":
            log("kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        if bad and self.failed and not self._raised:
            raise Failure("%s did not exit 0 on SIGTERM, or a sanitizer "
                          "reported" % ", ".join(
                "%s (%s)" % (p.name, p.p.returncode) for p in bad))



def local_user(name):
    """The uid of local user name, made with useradd if there is none."""
    import pwd
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        pass
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", name], check=True)
    return pwd.getpwnam(name).pw_uid

# struct seg_header / struct seg_slot (common/segment.h), SEG_VERSION 9: what a
# test reads of a segment, as the rank wrote it (not as an agent reported it).
HDR_SLOTS_OFFSET = 32           # slots_offset, slot_size, nslots
SLOT_PID, SLOT_STEP, SLOT_RANK, SLOT_STATE, SLOT_PIDNS = 0, 8, 16, 20, 1656


def segment_slots(shm, job):
    """{slot index: dict(pid, step, rank, state, pidns)} of the slots of job's
    segment in directory shm that are held or were (pid or state not 0)."""
    import struct
    with open(os.path.join(shm, "dynprof." + job), "rb") as f:
        b = f.read()
    off, size, n = struct.unpack_from("<III", b, HDR_SLOTS_OFFSET)
    out = {}
    for i in range(n):
        s = off + i * size
        pid, = struct.unpack_from("<i", b, s + SLOT_PID)
        step, = struct.unpack_from("<q", b, s + SLOT_STEP)
        rank, state = struct.unpack_from("<iI", b, s + SLOT_RANK)
        pidns, = struct.unpack_from("<Q", b, s + SLOT_PIDNS)
        if pid != 0 or state != 0:
            out[i] = dict(pid=pid, step=step, rank=rank, state=state,
                          pidns=pidns)
    return out


def compact(ranks):
    ranks = sorted(ranks)
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else "%d-%d" % (ranks[i], ranks[j]))
        i = j + 1
    return ",".join(out)


def rfc3339(t):
    """Unix time t as the coordinator writes times: RFC 3339, UTC, ms."""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_time(s):
    """A time the coordinator wrote (rfc3339()) as Unix time."""
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def events_of(rank_status, kind, wid):
    return [e for e in rank_status.get("events", [])
            if e.get("kind") == kind and e.get("window") == wid]


def check_collected_once(status, wid):
    """Each rank of a job's status has one collected event of window wid."""
    for r in status["ranks"]:
        check(len(events_of(r, "collected", wid)) == 1,
              "rank %d: collected events %s" % (r["rank"], r["events"]))


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def main(test):
    """Runs test(); exit 0 pass, 1 fail, 77 skip.  test() returns 0 (or None)
    for a pass, SKIP for a skip; any other return is a failure."""
    try:
        for b in (COORDINATOR, AGENT, TRAIN_SIM, LIBRARY):
            binary(b)
    except RuntimeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
    try:
        rc = test()
    except Failure as e:
        print("FAIL: %s" % e)
        sys.exit(1)
    if rc == SKIP:
        sys.exit(SKIP)
    if rc not in (0, None):
        print("FAIL: the test returned %r" % (rc,))
        sys.exit(1)
    print("PASS")
    sys.exit(0)
