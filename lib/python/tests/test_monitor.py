"""dynprof.Monitor over the real libdynprof and a real segment.

The schedule is written into the segment the library created, as the agent does
(segwriter.py); events are received on a real unix datagram socket bound where
the library sends them, and decoded.
"""

import gc
import os
import subprocess
import sys

import pytest

import dynprof
from conftest import (EVENT_ATTACHED, EVENT_DETACHED, EVENT_FAILED,
                      EVENT_SKIPPED, EVENT_STARTED, EVENT_STOPPED)

COMPLETED = dynprof.StopReason.COMPLETED
CANCELLED = dynprof.StopReason.CANCELLED
CLOSED = dynprof.StopReason.CLOSED


class Recorder:
    """Callbacks that record what they were called with, and at which step."""

    def __init__(self):
        self.calls = []
        self.step = None
        self.args = []

    def on_start(self, window, options, fw, output_dir):
        self.calls.append(("start", window.id, self.step))
        self.args.append((window, options, fw, output_dir))

    def on_stop(self, window, reason, output_dir):
        self.calls.append(("stop", window.id, self.step, reason))


def W(id, start, stop, **kw):
    d = dict(id=id, start=start, stop=stop)
    d.update(kw)
    return d


# Scenarios: (name, rank, ops, expected calls).  ops: ("write", [windows])
# before the next step, or ("run", a, b): steps a..b, or ("close",).
SCENARIOS = [
    ("one window", 0,
     [("write", [W(1, 5, 8)]), ("run", 1, 12)],
     [("start", 1, 5), ("stop", 1, 8, COMPLETED)]),
    ("window set before the first step", 0,
     [("write", [W(1, 1, 1)]), ("run", 1, 3)],
     [("start", 1, 1), ("stop", 1, 1, COMPLETED)]),
    ("two windows", 0,
     [("write", [W(1, 3, 4), W(2, 7, 9)]), ("run", 1, 12)],
     [("start", 1, 3), ("stop", 1, 4, COMPLETED),
      ("start", 2, 7), ("stop", 2, 9, COMPLETED)]),
    ("start behind the rank: skipped, never late", 0,
     [("run", 1, 10), ("write", [W(1, 3, 12)]), ("run", 11, 15)],
     []),
    ("latched after the window left the config", 0,
     [("write", [W(1, 5, 10)]), ("run", 1, 6), ("write", []),
      ("run", 7, 12)],
     [("start", 1, 5), ("stop", 1, 10, COMPLETED)]),
    ("latched: a new stop step is not taken", 0,
     [("write", [W(1, 5, 10)]), ("run", 1, 6), ("write", [W(1, 5, 7)]),
      ("run", 7, 12)],
     [("start", 1, 5), ("stop", 1, 10, COMPLETED)]),
    ("cancelled while running: stops at the next step_end", 0,
     [("write", [W(1, 5, 10)]), ("run", 1, 6),
      ("write", [W(1, 5, 10, cancelled=True)]), ("run", 7, 12)],
     [("start", 1, 5), ("stop", 1, 7, CANCELLED)]),
    ("cancelled before it started", 0,
     [("write", [W(1, 5, 10)]), ("run", 1, 3),
      ("write", [W(1, 5, 10, cancelled=True)]), ("run", 4, 12)],
     []),
    ("other ranks' window", 0,
     [("write", [W(1, 3, 4, ranks="1-3")]), ("run", 1, 6)],
     []),
    ("this rank's window", 2,
     [("write", [W(1, 3, 4, ranks="0,2-3")]), ("run", 1, 6)],
     [("start", 1, 3), ("stop", 1, 4, COMPLETED)]),
    ("invalid window ignored, the next runs", 0,
     [("write", [W(1, 6, 4), W(2, 8, 8)]), ("run", 1, 10)],
     [("start", 2, 8), ("stop", 2, 8, COMPLETED)]),
    ("a window runs once", 0,
     [("write", [W(1, 2, 3)]), ("run", 1, 5), ("write", [W(1, 2, 3)]),
      ("run", 6, 8)],
     [("start", 1, 2), ("stop", 1, 3, COMPLETED)]),
    ("a window added after another ran", 0,
     [("write", [W(1, 2, 3)]), ("run", 1, 5),
      ("write", [W(1, 2, 3), W(2, 9, 11)]), ("run", 6, 20)],
     [("start", 1, 2), ("stop", 1, 3, COMPLETED),
      ("start", 2, 9), ("stop", 2, 11, COMPLETED)]),
    ("closed inside a window", 0,
     [("write", [W(1, 4, 100)]), ("run", 1, 6), ("close",)],
     [("start", 1, 4), ("stop", 1, "close", CLOSED)]),
]


def run_scenario(env, rank, ops, fast_path, mode):
    rec = Recorder()
    mon = dynprof.Monitor(rank=rank, on_start=rec.on_start,
                          on_stop=rec.on_stop, fast_path=fast_path,
                          **env.kwargs())
    seg = env.segment()
    try:
        for op in ops:
            if op[0] == "write":
                seg.write(op[1])
            elif op[0] == "run":
                for n in range(op[1], op[2] + 1):
                    rec.step = n
                    if mode == "step":
                        mon.step()
                    elif mode == "c_step":      # the library's own counter
                        assert mon._lib.dynprof_step(mon._h) == 0
                    else:
                        mon.step_begin(n)
                        mon.step_end(n)
                    assert mon.current_step == n
            elif op[0] == "close":
                rec.step = "close"
                mon.close()
    finally:
        rec.step = "close"
        mon.close()
        seg.close()
    return rec.calls


@pytest.mark.parametrize("name,rank,ops,expected", SCENARIOS,
                         ids=[s[0] for s in SCENARIOS])
def test_window_rules(env, name, rank, ops, expected):
    """The Python fast path and the library agree, on every step sequence,
    and with the design's rules."""
    results = {}
    base = env.job
    for fast in (True, False):
        for mode in ("begin_end", "step"):
            env.job = "%s-%d%s" % (base, int(fast), mode[0])
            results[(fast, mode)] = run_scenario(env, rank, ops, fast, mode)
    assert results[(True, "begin_end")] == expected
    assert results[(False, "begin_end")] == expected
    assert results[(True, "step")] == results[(False, "step")]
    env.job = base + "-c"
    assert run_scenario(env, rank, ops, True, "c_step") == \
        results[(True, "step")]


def test_step_mode_stops_at_the_next_top(env):
    """step() ends step n when step n + 1 begins; close() ends the last."""
    rec = Recorder()
    with dynprof.Monitor(on_start=rec.on_start, on_stop=rec.on_stop,
                         **env.kwargs()) as mon:
        seg = env.segment()
        seg.write([W(1, 2, 3), W(2, 5, 6)])
        for n in range(1, 7):
            rec.step = n
            mon.step()
        rec.step = "close"
    assert rec.calls == [("start", 1, 2), ("stop", 1, 4, COMPLETED),
                         ("start", 2, 5), ("stop", 2, "close", COMPLETED)]


def test_layout_and_hot_path_store(env):
    """The segment the C library created has the layout the test writer
    assumes, and the Python fast path stores the step into this rank's slot."""
    mon = dynprof.Monitor(rank=3, **env.kwargs())
    seg = env.segment()             # checks magic, version, sizes
    slot = seg.slot_of(os.getpid())
    assert slot is not None and slot.rank == 3
    calls = mon._slow_calls()
    for n in range(1, 1001):
        mon.step_begin(n)
        mon.step_end(n)
    assert slot.step == 1000
    assert mon.current_step == 1000
    assert mon._slow_calls() == calls       # not one call into C
    seg.write([W(1, 1005, 1006)])
    for n in range(1001, 1011):
        mon.step_begin(n)
        mon.step_end(n)
    # The change (once), the start, the stop at its end.
    assert mon._slow_calls() == calls + 4
    del slot
    mon.close()
    assert seg.slot_of(os.getpid()) is None
    seg.close()


@pytest.mark.parametrize("fast_path", [True, False])
def test_mark_comm_busy_time(env, fast_path):
    """mark_comm(): the time from each step's beginning to its first mark is
    kept in the rank's slot (last, moving average, recent maximum, count),
    on the fast path too, without a call into C at the step."""
    import time
    mon = dynprof.Monitor(rank=0, fast_path=fast_path, **env.kwargs())
    seg = env.segment()
    slot = seg.slot_of(os.getpid())
    mon.step()
    mon.mark_comm()                 # the first mark: timing from now on
    assert slot.busy_count == 0
    calls = mon._slow_calls()
    busy = [0.002, 0.002, 0.002, 0.02]
    for b in busy:
        mon.step()
        time.sleep(b)
        mon.mark_comm()
        mon.mark_comm()             # a second mark of a step: not counted
        time.sleep(0.005)
    assert slot.busy_count == len(busy)
    assert 0.02e9 <= slot.busy_last_ns < 0.02e9 + 0.5e9
    assert slot.busy_max_ns == slot.busy_last_ns
    # 2 ms three times, then 20 ms with a weight of 1/8.
    assert 0.002e9 + 0.018e9 / 8 <= slot.busy_avg_ns < slot.busy_last_ns
    if fast_path:
        assert mon._slow_calls() == calls   # the steps stayed in Python
    del slot
    mon.close()
    seg.close()


def test_options_and_output_dir(env):
    rec = Recorder()
    mon = dynprof.Monitor(rank=1, on_start=rec.on_start, on_stop=rec.on_stop,
                          **env.kwargs())
    seg = env.segment()
    seg.write([W(4, 2, 3, aicore_metrics=2, profiler_level=1,
                 profile_framework=0, analyse_mode=1,
                 profile_communication=1, parallel_strategy=0, with_stack=1,
                 data_simplification=0, subdir="exp1",
                 fwopts='{"activities": ["cpu"], "record_shapes": true}')])
    for n in range(1, 5):
        mon.step()
    mon.close()
    seg.close()
    (window, options, fw, out), = rec.args
    assert window == dynprof.Window(4, 2, 3)
    assert options == dynprof.Options(2, 1, 0, 1, True, False, True, False)
    assert fw == {"activities": ["cpu"], "record_shapes": True}
    assert out == os.path.join(env.out, "exp1", "rank1_start2_stop3")
    assert os.path.isdir(out)


def test_events_reach_the_agent_socket(env):
    sink = env.listen()
    mon = dynprof.Monitor(rank=5, **env.kwargs())
    seg = env.segment()
    seg.write([W(9, 3, 4)])
    for n in range(1, 6):
        mon.step_begin(n)
        mon.step_end(n)
    seg.write([W(9, 3, 4), W(10, 2, 2)])     # behind the rank: skipped
    mon.step_begin(6)
    mon.step_end(6)
    mon.close()
    seg.close()
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    evs = sink.events
    assert [e["kind"] for e in evs] == [EVENT_ATTACHED, EVENT_STARTED,
                                         EVENT_STOPPED, EVENT_SKIPPED,
                                         EVENT_DETACHED]
    for e in evs:
        assert e["job"] == env.job and e.get("rank") == 5
        assert e["pid"] == os.getpid()
    st, sp, sk = evs[1], evs[2], evs[3]
    assert (st["window_id"], st["start_step"], st["stop_step"],
            st["step"]) == (9, 3, 4, 3)
    assert st["output_dir"] == os.path.join(env.out, "rank5_start3_stop4")
    assert (sp["window_id"], sp["step"], sp["reason"]) == (9, 4, COMPLETED)
    assert (sk["window_id"], sk["start_step"], sk["step"]) == (10, 2, 6)


@pytest.mark.parametrize("fast_path", [True, False])
def test_callback_exceptions_are_contained_and_reported(env, fast_path):
    sink = env.listen()
    seen = []

    def on_start(window, options, fw, out):
        seen.append(("start", window.id))
        if window.id == 1:
            raise RuntimeError("no profiler here")

    def on_stop(window, reason, out):
        seen.append(("stop", window.id))
        raise ValueError("cannot flush " + "x" * 1000)

    mon = dynprof.Monitor(on_start=on_start, on_stop=on_stop,
                          fast_path=fast_path, **env.kwargs())
    seg = env.segment()
    seg.write([W(1, 2, 3), W(2, 5, 6)])
    for n in range(1, 9):           # nothing propagates
        mon.step_begin(n)
        mon.step_end(n)
        if n == 3:                  # window 2 still to run
            assert mon.state == dynprof.RankState.ARMED
    assert mon.state == dynprof.RankState.FAILED
    mon.close()
    seg.close()
    # on_stop is not called for a window whose start failed.
    assert seen == [("start", 1), ("start", 2), ("stop", 2)]
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    failed = [e for e in sink.events if e["kind"] == EVENT_FAILED]
    assert len(failed) == 2
    assert failed[0]["window_id"] == 1 and failed[0]["step"] == 2
    assert failed[0]["error"] == "on_start: RuntimeError: no profiler here"
    assert failed[1]["window_id"] == 2 and failed[1]["step"] == 6
    assert failed[1]["error"].startswith("on_stop: ValueError: cannot flush x")
    assert len(failed[1]["error"].encode()) <= 255


def test_bad_framework_options_fail_the_window(env):
    sink = env.listen()
    rec = Recorder()
    mon = dynprof.Monitor(on_start=rec.on_start, **env.kwargs())
    seg = env.segment()
    seg.write([W(1, 2, 3, fwopts="[1, 2]"), W(2, 5, 5, fwopts="{oops")])
    for n in range(1, 7):
        mon.step()
    mon.close()
    seg.close()
    assert rec.calls == []
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    errors = [e["error"] for e in sink.events if e["kind"] == EVENT_FAILED]
    assert errors[0] == \
        "on_start: ValueError: framework options are not a JSON object"
    assert errors[1].startswith(
        "on_start: ValueError: framework options are not JSON")


def test_keyboard_interrupt_is_reported_then_raised(env):
    sink = env.listen()

    def on_start(*args):
        raise KeyboardInterrupt()

    mon = dynprof.Monitor(on_start=on_start, **env.kwargs())
    seg = env.segment()
    seg.write([W(1, 2, 3)])
    mon.step_begin(1)
    with pytest.raises(KeyboardInterrupt):
        mon.step_begin(2)
    mon.step_end(2)
    mon.close()
    seg.close()
    e = sink.wait_for(lambda e: e.get("kind") == EVENT_FAILED)
    assert e["error"] == "on_start: KeyboardInterrupt"


def test_closed_monitor(env):
    mon = dynprof.Monitor(**env.kwargs())
    mon.close()
    mon.close()
    assert mon.closed
    mon.step()                      # no effect, no crash
    mon.step_begin(5)
    mon.step_end(5)
    assert mon.state is None and mon.active_window is None
    assert mon.current_step == -1 and mon.stats["events_sent"] == 0
    mon.report_failure("after close")   # nothing, and nothing raised


def test_dropped_monitor_frees_its_slot(env):
    mon = dynprof.Monitor(**env.kwargs())
    seg = env.segment()
    assert seg.slot_of(os.getpid()) is not None
    del mon
    gc.collect()
    assert seg.slot_of(os.getpid()) is None
    seg.close()


def test_labels_reach_the_slot(env, caplog):
    """Labels given as a dict or a text reach the rank's slot in canonical
    form; bad ones fail the open (open failing open: the library's reason
    is logged, the steps do nothing)."""
    mon = dynprof.Monitor(labels={"tp": 1, "pp": 3}, **env.kwargs())
    seg = env.segment()
    assert seg.slot_of(os.getpid()).labels == b"pp=3,tp=1"
    mon.close()
    mon = dynprof.Monitor(labels="dp=12", **env.kwargs())
    assert seg.slot_of(os.getpid()).labels == b"dp=12"
    mon.close()
    caplog.set_level("ERROR", logger="dynprof")
    mon = dynprof.Monitor(labels="pp=3,pp=4", **env.kwargs())
    assert mon.closed and "invalid argument" in mon.error.lower()
    assert any("a key given twice" in r.getMessage() for r in caplog.records)
    assert seg.slot_of(os.getpid()) is None
    seg.close()


def test_bad_job_is_refused(env):
    with pytest.raises(dynprof.DynprofError) as ei:
        dynprof.Monitor(strict=True, **env.kwargs(job="../etc"))
    assert ei.value.code == -2      # DYNPROF_EJOB


def test_bad_job_fails_open(env, caplog):
    """Without strict, a Monitor that cannot open logs why, once, and its
    steps do nothing: training goes on."""
    caplog.set_level("WARNING", logger="dynprof")
    mons = [dynprof.Monitor(**env.kwargs(job="../etc")) for _ in range(2)]
    for m in mons:
        assert m.closed and "invalid job" in m.error.lower()
        for _ in range(3):
            m.step()
        m.step_begin(4)
        m.step_end(4)
        assert m.job == "../etc" and m.state is None
        m.close()
    # The library's own line per open (its reason), and one of the binding.
    lines = [r.getMessage() for r in caplog.records if r.name == "dynprof"
             and r.getMessage().startswith("running without dynprof")]
    assert lines == ["running without dynprof: dynprof_open: invalid job id"
                     " (job '../etc', rank from the environment)"]


def test_report_failure(env):
    sink = env.listen()
    mon = dynprof.Monitor(**env.kwargs())
    seg = env.segment()
    seg.write([W(1, 1, 10)])
    mon.step()
    assert mon.active_window == dynprof.Window(1, 1, 10)
    assert not mon.active_window.timed and mon.active_window.duration_ns == 0
    assert repr(mon.active_window) == \
        "Window(id=1, start_step=1, stop_step=10)"
    mon.report_failure("device lost")
    assert mon.state == dynprof.RankState.FAILED
    mon.close()
    seg.close()
    e = sink.wait_for(lambda e: e.get("kind") == EVENT_FAILED)
    assert e["error"] == "device lost" and e["window_id"] == 1


def test_missing_library_is_a_clear_error(tmp_path):
    code = ("import dynprof\n"
            "try:\n"
            "    dynprof.Monitor(strict=True)\n"
            "except dynprof.DynprofError as e:\n"
            "    print('ERR', e.code, e)\n")
    env = dict(os.environ, DYNPROF_LIBRARY=str(tmp_path / "nope.so"))
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=pkg, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ERR None libdynprof not found")
    assert "nope.so (absent)" in out.stdout


EXIT_SCRIPT = """
import os, sys
sys.path[:0] = [%(pkg)r, %(tests)r]
import dynprof, segwriter
def on_stop(window, reason, out):
    # Module globals (os) must still be there.
    os.write(1, b"on_stop %%s\\n" %% reason.name.encode())
mon = dynprof.Monitor(on_stop=on_stop, **%(kwargs)r)
seg = segwriter.Segment(%(shm)r, %(job)r)
seg.write([dict(id=1, start=2, stop=100)])
for n in range(1, 5):
    mon.step()
if %(fork)r:
    pid = os.fork()
    if pid == 0:
        sys.exit(0)         # a normal exit of a forked child
    os.waitpid(pid, 0)
    mon.step()
    os.write(1, b"parent %%d\\n" %% mon.current_step)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("fork", [False, True])
def test_exit_without_close_stops_the_window(env, fork):
    """An interpreter that exits with a monitor open stops its window (on_stop
    runs while the callbacks' modules are alive); a forked child's exit does
    not touch the parent's rank."""
    sink = env.listen()
    tests = os.path.dirname(os.path.abspath(__file__))
    code = EXIT_SCRIPT % dict(pkg=os.path.dirname(tests), tests=tests,
                              kwargs=env.kwargs(), shm=env.shm_dir,
                              job=env.job, fork=fork)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    expect = ["exiting", "on_stop CLOSED"]
    if fork:
        expect.insert(0, "parent 5")
    assert out.stdout.split("\n")[:-1] == expect
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    kinds = [e["kind"] for e in sink.events]
    assert kinds == [EVENT_ATTACHED, EVENT_STARTED, EVENT_STOPPED,
                     EVENT_DETACHED]
    assert sink.events[2]["reason"] == CLOSED
    assert sink.events[2]["step"] == (5 if fork else 4)


def test_torn_config_is_never_acted_on(env):
    """An agent that died in the middle of a write (seq left odd): the rank
    keeps the last whole schedule, does not call the library at every step,
    and takes the new one once the counter moves to even again."""
    rec = Recorder()
    mon = dynprof.Monitor(on_start=rec.on_start, on_stop=rec.on_stop,
                          **env.kwargs())
    seg = env.segment()
    seg.write([W(1, 3, 3)])
    seg.hdr.seq += 1                # odd: a write begins...
    c = seg.config                  # ...and changes the schedule in place
    c.windows[0].start_step, c.windows[0].stop_step = 4, 4
    c.generation += 1
    for n in range(1, 7):
        rec.step = n
        mon.step_begin(n)
        mon.step_end(n)
    assert rec.calls == []          # neither the old window nor the torn one
    calls = mon._slow_calls()
    for n in range(7, 1007):
        mon.step_begin(n)
        mon.step_end(n)
    assert mon._slow_calls() <= calls + 1
    c.windows[0].start_step, c.windows[0].stop_step = 1010, 1011
    seg.hdr.seq += 1                # even: the write is complete
    for n in range(1007, 1013):
        rec.step = n
        mon.step_begin(n)
        mon.step_end(n)
    mon.close()
    seg.close()
    assert rec.calls == [("start", 1, 1010), ("stop", 1, 1011, COMPLETED)]


def test_two_ranks_in_one_process(env):
    recs = [Recorder(), Recorder()]
    mons = [dynprof.Monitor(rank=r, on_start=recs[r].on_start,
                            on_stop=recs[r].on_stop, **env.kwargs())
            for r in (0, 1)]
    seg = env.segment()
    seg.write([W(1, 2, 3, ranks="1"), W(2, 5, 5)])
    for n in range(1, 7):
        for m, rec in zip(mons, recs):
            rec.step = n
            m.step_begin(n)
            m.step_end(n)
    for m in mons:
        m.close()
    seg.close()
    assert recs[0].calls == [("start", 2, 5), ("stop", 2, 5, COMPLETED)]
    assert recs[1].calls == [("start", 1, 2), ("stop", 1, 3, COMPLETED),
                             ("start", 2, 5), ("stop", 2, 5, COMPLETED)]


def random_ops(rng):
    """A random schedule history: windows (some for other ranks, some
    invalid), rewrites, cancellations, and runs of steps between them."""
    ops = []
    step = 0
    next_id = 1
    windows = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.5 or not windows:
            start = step + rng.randint(-2, 8)
            w = W(next_id, start, start + rng.randint(-1, 5))
            if rng.random() < 0.2:
                w["ranks"] = rng.choice(["1", "0,2", "1-3", "0-7"])
            next_id += 1
            windows = sorted(windows + [w], key=lambda x: x["start"])[-16:]
        elif kind < 0.7:
            rng.choice(windows)["cancelled"] = True
        elif kind < 0.85:
            windows = windows[1:]           # a window leaves the config
        else:
            w = rng.choice(windows)         # its steps change
            w["stop"] = w["start"] + rng.randint(0, 4)
        ops.append(("write", [dict(w) for w in windows]))
        n = rng.randint(0, 9)
        if n:
            ops.append(("run", step + 1, step + n))
            step += n
    if rng.random() < 0.5:
        ops.append(("close",))
    return ops


@pytest.mark.parametrize("seed", range(12))
def test_random_histories_agree_with_the_library(env, seed):
    """Random schedule histories: the Python fast path makes exactly the calls
    the library makes when called at every step, and step() exactly those of
    the library's own dynprof_step()."""
    import random
    rng = random.Random(seed)
    base = env.job
    for i in range(5):
        ops = random_ops(rng)
        got = {}
        for fast, mode in ((True, "begin_end"), (False, "begin_end"),
                           (True, "step"), (True, "c_step")):
            env.job = "%s-%d-%d%s" % (base, i, int(fast), mode[0:2])
            got[(fast, mode)] = run_scenario(env, 0, ops, fast, mode)
        assert got[(True, "begin_end")] == got[(False, "begin_end")], ops
        assert got[(True, "step")] == got[(True, "c_step")], ops


FAIL_OPEN_SCRIPT = """
import logging, sys
sys.path[:0] = [%(pkg)r, %(tests)r]
if %(logging)r:
    logging.basicConfig(level=logging.WARNING, format="LOG %%(message)s")
import dynprof, dynprof.torch
from test_torch_optim import PlainOptimizer
opt = PlainOptimizer()
with dynprof.torch.profile_steps(opt) as ps:
    for _ in range(5):
        opt.step()
    ps.monitor.report_failure("x")
mon = dynprof.Monitor()
mon.step()
mon.close()
print("trained", ps.steps, opt.calls, mon.error is not None, flush=True)
"""


@pytest.mark.parametrize("configured", [False, True])
def test_missing_library_fails_open(tmp_path, configured):
    """No libdynprof: profile_steps() and Monitor() say so once, training
    goes on."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = FAIL_OPEN_SCRIPT % dict(pkg=os.path.dirname(here), tests=here,
                                   logging=configured)
    env = dict(os.environ, DYNPROF_LIBRARY=str(tmp_path / "nope.so"))
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "trained 5 5 True\n"
    said = [ln for ln in out.stderr.splitlines()
            if "running without dynprof: libdynprof not found" in ln]
    assert len(said) == 1, out.stderr
    if configured:
        assert said[0].startswith("LOG running without dynprof")
    else:                       # seen where logging is not configured
        assert "RuntimeWarning: dynprof: running without dynprof" in said[0]


def test_torch_hook_labels(monkeypatch):
    """The PyTorch hook's labels: what the framework tells (node,
    local_rank), under what is given; a text that is no k=v list goes as it
    is, for the library to refuse with its reason."""
    import dynprof.torch as dt
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.delenv("DYNPROF_LABELS", raising=False)
    got = dt.rank_labels({"pp": 1})
    assert got["local_rank"] == "3" and got["pp"] == "1" and got["node"]
    assert dt.rank_labels("pp=2, local_rank=9")["local_rank"] == "9"
    monkeypatch.setenv("DYNPROF_LABELS", "tp=5")
    assert dt.rank_labels()["tp"] == "5"
    assert dt.rank_labels("garbage") == "garbage"


def test_poll_and_poller_time_window(env):
    """A process without steps: poll() starts a time window at its start and
    stops it at its end; start_poller() does it from a thread, which close()
    stops."""
    import threading
    import time
    got = []

    def on_start(window, options, fw, output_dir):
        got.append(("start", window.id, time.monotonic_ns(),
                    threading.current_thread().name, output_dir, window))

    def on_stop(window, reason, output_dir):
        got.append(("stop", window.id, time.monotonic_ns(), reason, window))

    mon = dynprof.Monitor(rank=2, on_start=on_start, on_stop=on_stop,
                          **env.kwargs())
    seg = env.segment()
    t0 = time.monotonic_ns()
    ms = 1000000
    u0 = 1764936000 * 1000000000
    seg.write([W(1, 0, 0, start_ns=t0 + 150 * ms, stop_ns=t0 + 300 * ms,
                 start_unix_ns=u0, stop_unix_ns=u0 + 150 * ms)])
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        mon.poll()
        if len(got) == 1:
            # The window in progress, as the callbacks got it.
            assert mon.active_window == got[0][5]
            assert mon.active_window.duration_ns == 150 * ms
        time.sleep(0.001)
    assert [g[:2] for g in got] == [("start", 1), ("stop", 1)]
    assert t0 + 150 * ms <= got[0][2] < t0 + 250 * ms
    assert t0 + 300 * ms <= got[1][2] < t0 + 400 * ms
    assert got[0][4].endswith("rank2_window1")
    assert got[1][3] == COMPLETED
    # Both callbacks see a time window, its start on both clocks and length;
    # it is still the tuple (id, start_step, stop_step).
    for g in got:
        w = g[-1]
        assert w.timed and w == (1, 0, 0)
        assert (w.start_ns, w.start_unix_ns, w.duration_ns) == \
            (t0 + 150 * ms, u0, 150 * ms)
        # Printed, it says its times (and reads back as the same window).
        assert "duration_ns=%d" % (150 * ms) in repr(w)
        back = eval(repr(w), {"Window": dynprof.Window})
        assert back == w and back.start_unix_ns == u0

    del got[:]
    mon.start_poller(0.005)
    t1 = time.monotonic_ns()
    seg.write([W(2, 0, 0, start_ns=t1 + 150 * ms, stop_ns=t1 + 300 * ms)])
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [g[:2] for g in got] == [("start", 2), ("stop", 2)]
    assert got[0][3] == "dynprof-poller"
    assert t1 + 150 * ms <= got[0][2] < t1 + 300 * ms
    assert t1 + 300 * ms <= got[1][2] < t1 + 450 * ms
    mon.close()
    assert not any(t.name == "dynprof-poller" for t in threading.enumerate())
    seg.close()
