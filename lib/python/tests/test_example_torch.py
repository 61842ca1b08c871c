"""README's "Profile your own job", as a new user runs it from the build tree:
a coordinator, an agent, examples/torch_ddp.py as a two-rank DDP job over gloo
(real torch, CPU) with the environment the README gives, and dynprofctl
trace --wait.  The trace of each rank holds exactly the window's steps as
ProfilerStep#N spans.  The same example as four ranks, nobody slowed:
nobody is flagged a straggler at any time (the example once slept to a
deadline of each step's own beginning, which kept the ranks' start-up offsets
for ever: one rank last at every all-reduce by 35-80 ms, flagged), the busy
time is the example's compute, and once the ranks are gone nobody is named
last to arrive.  And the same job with no agent: it trains."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

pytest.importorskip("torch")

BUILD = os.environ.get("DYNPROF_BUILD_DIR", "")
SRC = os.environ.get("DYNPROF_SOURCE_DIR",
                     os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EXAMPLE = os.path.join(SRC, "examples", "torch_ddp.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


class Procs:
    def __init__(self, d):
        self.d = d
        self.procs = []

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.d, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                             env=env, cwd=self.d)
        log.close()
        self.procs.append((name, p))
        return p

    def log(self, name):
        with open(os.path.join(self.d, name + ".log")) as f:
            return f.read()

    def stop(self):
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def start_ranks(procs, d, job, *args, world=2):
    """The world ranks of examples/torch_ddp.py ARGS, as the README starts
    them."""
    master = str(free_port())
    ranks = []
    for r in range(world):
        env = job_env(d, job, r, world)
        env["MASTER_PORT"] = master
        ranks.append(procs.start("rank%d" % r, [sys.executable, EXAMPLE] +
                                 list(args), env=env))
    return ranks


def job_env(d, job, rank, world=2):
    """What the README says to export, and torch's rendezvous."""
    env = dict(os.environ)
    env.update(DYNPROF_JOB=job,
               DYNPROF_AGENT_SOCKET=os.path.join(d, "agent.sock"),
               DYNPROF_SHM_DIR=os.path.join(d, "shm"),
               DYNPROF_OUTPUT_ROOT=os.path.join(d, "traces"),
               PYTHONPATH=os.path.join(SRC, "lib", "python"),
               DYNPROF_LIBRARY=os.path.join(BUILD, "lib", "libdynprof.so"),
               RANK=str(rank), WORLD_SIZE=str(world),
               MASTER_ADDR="127.0.0.1")
    return env


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="dpex")
    for sub in ("state", "shm", "traces"):
        os.mkdir(os.path.join(d, sub))
    procs = Procs(d)
    try:
        yield d, procs
    finally:
        procs.stop()
        subprocess.run(["rm", "-rf", d])


def start_cluster(d, procs):
    """A coordinator and an agent as the README starts them (on ports of
    their own).  Returns the coordinator's ports."""
    ready = os.path.join(d, "coord.ready")
    procs.start("coordinator", [
        os.path.join(BUILD, "server", "dynprof-coordinator"),
        "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
        "--state-dir", os.path.join(d, "state"), "--ready-file", ready])

    def read_ports():
        if not os.path.exists(ready):
            return None
        with open(ready) as f:
            kv = dict(ln.strip().split("=", 1) for ln in f if "=" in ln)
        return kv if "http_port" in kv and "agent_port" in kv else None

    ports = wait_for(read_ports, "the coordinator")
    areadyf = os.path.join(d, "agent.ready")
    procs.start("agent", [
        os.path.join(BUILD, "agent", "dynprof-agent"),
        "--coordinator", "127.0.0.1:%s" % ports["agent_port"],
        "--node", "node1", "--socket", os.path.join(d, "agent.sock"),
        "--shm-dir", os.path.join(d, "shm"), "--ready-file", areadyf])
    wait_for(lambda: os.path.exists(areadyf) and os.path.getsize(areadyf),
             "the agent")
    return ports


def test_readme_walkthrough(workdir):
    d, procs = workdir
    ports = start_cluster(d, procs)
    start_ranks(procs, d, "mlp", "--steps", "400", "--step-time", "0.05")
    ctl_env = dict(os.environ, DYNPROF_COORDINATOR="http://127.0.0.1:%s" %
                   ports["http_port"])
    ctl = os.path.join(BUILD, "ctl", "dynprofctl")

    def status():
        out = subprocess.run([ctl, "--json", "status", "mlp"], env=ctl_env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            return None
        s = json.loads(out.stdout)
        steps = s.get("steps") or {}
        return steps.get("ranks") == 2 and (steps.get("min") or 0) > 30

    # Running for a second or two: the coordinator has measured the job's
    # rate, which --in counts from (docs/admin-api.md).
    wait_for(status, "both ranks reporting steps", timeout=120)
    # The typo first: refused with the job there is named.
    out = subprocess.run([ctl, "trace", "mpl", "--in", "5", "--steps", "5",
                          "--wait"], env=ctl_env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1
    assert "did you mean mlp?" in out.stderr
    out = subprocess.run([ctl, "trace", "mlp", "--in", "1", "--steps", "5",
                          "--wait", "--timeout", "60"], env=ctl_env,
                         capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all 2 targeted ranks stopped" in out.stdout
    first = out.stdout.splitlines()[0]        # "window 1: steps A-B on ..."
    a, b = (int(x) for x in first.split("steps ")[1].split()[0].split("-"))
    assert b == a + 4
    for r in (0, 1):
        path = os.path.join(d, "traces", "rank%d_start%d_stop%d" % (r, a, b),
                            "rank%d.pt.trace.json" % r)
        with open(path) as f:
            trace = json.load(f)
        steps = sorted(int(e["name"].split("#")[1])
                       for e in trace["traceEvents"]
                       if e.get("name", "").startswith("ProfilerStep#"))
        assert steps == list(range(a, b + 1))
        assert trace["dynprof"] == {"job": "mlp", "rank": r, "window": 1,
                                    "start_step": a, "stop_step": b,
                                    "steps": [a, b], "reason": "completed"}
        assert trace["distributedInfo"] == {"backend": "gloo", "rank": r,
                                            "world_size": 2}


def test_balanced_flags_nobody(workdir):
    d, procs = workdir
    ports = start_cluster(d, procs)
    steps = 250
    ranks = start_ranks(procs, d, "mlp", "--steps", str(steps), world=4)
    base = "http://127.0.0.1:%s" % ports["http_port"]

    def get(path):
        with urllib.request.urlopen(base + path, timeout=10) as r:
            return r.read().decode()

    def stragglers():
        try:
            return json.loads(get("/v1/jobs/mlp/stragglers"))
        except OSError:
            return None     # the job not there yet: 404

    flagged, judged, seen = [], 0, None
    deadline = time.monotonic() + 150
    while any(p.poll() is None for p in ranks):
        assert time.monotonic() < deadline, "the ranks still run"
        s = stragglers()
        if s is not None:
            flagged += [(s["median_step"], w) for w in s["worst_ranks"]]
            if s["busy_ranks"] == 4 and s["arrive_ranks"] == 4:
                judged = max(judged, s["arrive_steps_judged"])
                seen = s
        time.sleep(0.5)
    for r, p in enumerate(ranks):
        assert p.wait() == 0, procs.log("rank%d" % r)
    assert not flagged, "balanced job flagged %s" % flagged
    # Judged all along: the four ranks' busy times (the example's 100 ms of
    # compute before the all-reduce) and most steps' arrivals, with the step
    # time their marks show.
    assert judged > steps // 2, seen
    assert 90 < seen["busy_median_ms"] < seen["step_ms"] < 400, seen
    assert seen["floor_ms"] == pytest.approx(seen["step_ms"] * 0.05,
                                             abs=0.002)

    def gone():
        s = stragglers()
        return s if s is not None and s["ranks_judged"] == 0 else None

    s = wait_for(gone, "the ranks gone from the judgement", timeout=60)
    assert s["arrive_ranks"] == 0 and s["last_arriver"] is None, s
    assert 'dynprof_stragglers{job="mlp",reason="last"} 0' in get("/metrics")


def test_no_agent_trains(workdir):
    d, procs = workdir
    ranks = start_ranks(procs, d, "alone", "--steps", "30", "--step-time",
                        "0")
    for r, p in enumerate(ranks):
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("rank %d still running after 120 s:\n%s\n%s" % (
                r, procs.log("rank0"), procs.log("rank1")))
        assert rc == 0, procs.log("rank%d" % r)
    assert os.listdir(os.path.join(d, "traces")) == []
    # No agent ever served the segment: it went with the last rank
    # (docs/segments.md).
    assert os.listdir(os.path.join(d, "shm")) == []
