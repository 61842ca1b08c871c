"""README's "Profile your own job", as a new user runs it from the build tree:
a coordinator, an agent, examples/torch_ddp.py as a two-rank DDP job over gloo
(real torch, CPU) with the environment the README gives, and dynprofctl
trace --wait.  The trace of each rank holds exactly the window's steps as
ProfilerStep#N spans.  The same example as four ranks, nobody slowed:
nobody is flagged a straggler at any time (the example once slept to a
deadline of each step's own beginning, which kept the ranks' start-up offsets
for ever: one rank last at every all-reduce by 35-80 ms, flagged), the busy
time is the example's compute, and once the ranks are gone nobody is named
last to arrive.  And the same job with no agent: it trains.

examples/mindspore_train.py likewise, with the MindSpore stand-ins
(standins/mindspore) on the path: a window scheduled with dynprofctl is
acknowledged by the rank at exactly its steps, and the stand-in Profiler is
built with the window's output directory, started at its first step and
stopped at its last."""

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

# The torch tests; the MindSpore one runs with the stand-ins.
needs_torch = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("torch") is None,
    reason="no torch")

BUILD = os.environ.get("DYNPROF_BUILD_DIR", "")
SRC = os.environ.get("DYNPROF_SOURCE_DIR",
                     os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EXAMPLE = os.path.join(SRC, "examples", "torch_ddp.py")
MS_EXAMPLE = os.path.join(SRC, "examples", "mindspore_train.py")
STANDINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins")


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


def job_stepping(ctl_env, job, ranks, past):
    """Whether dynprofctl status shows the job's RANKS ranks all beyond step
    PAST."""
    out = subprocess.run([os.path.join(BUILD, "ctl", "dynprofctl"), "--json",
                          "status", job], env=ctl_env, capture_output=True,
                         text=True)
    if out.returncode != 0:
        return None
    steps = json.loads(out.stdout).get("steps") or {}
    return steps.get("ranks") == ranks and (steps.get("min") or 0) > past


@needs_torch
def test_readme_walkthrough(workdir):
    d, procs = workdir
    ports = start_cluster(d, procs)
    start_ranks(procs, d, "mlp", "--steps", "400", "--step-time", "0.05")
    ctl_env = dict(os.environ, DYNPROF_COORDINATOR="http://127.0.0.1:%s" %
                   ports["http_port"])
    ctl = os.path.join(BUILD, "ctl", "dynprofctl")

    def status():
        return job_stepping(ctl_env, "mlp", 2, 30)

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


@needs_torch
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


@needs_torch
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


# Runs a script as python3 would, recording the stand-in Profiler's calls and
# each call of the drop-in's step() ("step", N: the Nth call, which ends step
# N-1 and begins step N) into the JSON file argv[1].
RECORDED = r"""
import atexit, json, runpy, sys
import mindspore.profiler as msprof
import dynprof.mindspore as dm
cls, calls, record = dm._DynamicProfilerMonitor, [0], sys.argv[1]
step = cls.step
def counted(self):
    calls[0] += 1
    msprof.CALLS.append(("step", calls[0]))
    step(self)
cls.step = counted
def dump():
    with open(record, "w") as f:
        json.dump(msprof.CALLS, f, default=str)
atexit.register(dump)
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_mindspore_example(workdir):
    d, procs = workdir
    ports = start_cluster(d, procs)
    env = job_env(d, "msjob", 1, world=1)
    env["PYTHONPATH"] += os.pathsep + STANDINS
    del env["RANK"]
    env["RANK_ID"] = "1"
    record = os.path.join(d, "calls.json")
    out = os.path.join(d, "msout")
    rank = procs.start("msrank", [sys.executable, "-c", RECORDED, record,
                                  MS_EXAMPLE, "--steps", "300",
                                  "--step-time", "0.05", "--output", out],
                       env=env)
    base = "http://127.0.0.1:%s" % ports["http_port"]
    ctl_env = dict(os.environ, DYNPROF_COORDINATOR=base)
    ctl = os.path.join(BUILD, "ctl", "dynprofctl")

    def stepping():
        assert rank.poll() is None, procs.log("msrank")
        return job_stepping(ctl_env, "msjob", 1, 20)

    wait_for(stepping, "the rank reporting steps", timeout=120)
    r = subprocess.run([ctl, "trace", "msjob", "--in", "5", "--steps", "4",
                        "--wait", "--timeout", "60"], env=ctl_env,
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr + procs.log("msrank")
    assert "all 1 targeted rank stopped" in r.stdout
    a, b = (int(x) for x in r.stdout.splitlines()[0].split("steps ")[1]
            .split()[0].split("-"))
    assert b == a + 3
    try:
        assert rank.wait(timeout=120) == 0, procs.log("msrank")
    except subprocess.TimeoutExpired:
        pytest.fail("the rank still runs:\n" + procs.log("msrank"))
    outdir = os.path.join(out, "rank1_start%d_stop%d" % (a, b))

    # The rank's acknowledgement, as the coordinator committed it (the
    # output directory comes with "started").
    with urllib.request.urlopen(base + "/v1/jobs/msjob/events",
                                timeout=10) as resp:
        events = [json.loads(ln) for ln in resp.read().decode().splitlines()]
    acks = [(e["kind"], e["rank"], e["step"], e.get("output_dir"))
            for e in events if e.get("type") == "rank" and
            e.get("window") == 1 and e["kind"] in ("started", "stopped",
                                                   "skipped", "failed")]
    assert acks == [("started", 1, a, outdir), ("stopped", 1, b, None)], \
        events

    # The stand-in Profiler: built for that directory and started by the
    # step() that begins step a, stopped by the one that ends step b (the
    # step() beginning b + 1), and finalized (dynprofctl's default
    # analyse_mode -1, as MindSpore's).
    with open(record) as f:
        calls = json.load(f)
    seen, last = [], None
    for c in calls:
        if c[0] == "step":
            last = c[1]
        else:
            seen.append((last, c[0]))
    assert seen == [(a, "Profiler"), (a, "start"), (b + 1, "stop"),
                    (b + 1, "finalize")], calls
    built = next(c for c in calls if c[0] == "Profiler")[1]
    assert built["output_path"] == outdir
    assert built["start_profile"] is False
    assert last == 300
