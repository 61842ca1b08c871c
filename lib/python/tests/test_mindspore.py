"""dynprof.mindspore.DynamicProfilerMonitor against stand-in MindSpore modules
(standins/mindspore: Profiler records every call), over the real library and
a real segment.  The recorded calls are checked exactly, steps included."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "standins"))

import mindspore.communication                    # noqa: E402 (stand-in)
import mindspore.profiler as msprof               # noqa: E402
import mindspore.train                            # noqa: E402

import dynprof                                    # noqa: E402
import dynprof.mindspore                          # noqa: E402
from conftest import EVENT_DETACHED, EVENT_FAILED  # noqa: E402
from test_monitor import W                        # noqa: E402

L = msprof.ProfilerLevel


class Ctx:
    """MindSpore's RunContext, as much as the callback reads."""

    def __init__(self):
        self.cur_step_num = 0

    def original_args(self):
        return self


@pytest.fixture(autouse=True)
def fresh_standins():
    msprof.CALLS.clear()
    msprof.FAIL.clear()
    mindspore.communication.RANK_FOR_TEST = None
    yield
    msprof.FAIL.clear()


def train(cb, first, last, ctx=None):
    """Model.train's calls to a callback, with markers in the record."""
    ctx = ctx or Ctx()
    for n in range(first, last + 1):
        ctx.cur_step_num = n
        msprof.CALLS.append(("step_begin", n))
        cb.on_train_step_begin(ctx)
        msprof.CALLS.append(("step_end", n))
        cb.on_train_step_end(ctx)
    return ctx


def calls_between(a, b):
    """The Profiler calls, each with the marker it followed."""
    out = []
    marker = None
    for c in msprof.CALLS:
        if c[0] in ("step_begin", "step_end"):
            marker = c
        else:
            out.append((marker,) + c)
    return out


def test_is_a_callback_and_imports_mindspore_lazily(env, tmp_path):
    cls = dynprof.mindspore.DynamicProfilerMonitor
    assert issubclass(cls, mindspore.train.Callback)
    assert cls.__module__ == "dynprof.mindspore"
    assert "poll_interval" in cls.__doc__
    code = "import sys, dynprof.mindspore; print('mindspore' in sys.modules)"
    pkg = os.path.dirname(HERE)
    out = subprocess.run([sys.executable, "-c", code], cwd=pkg,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_profiler_args_and_steps_exactly(env, tmp_path):
    out = str(tmp_path / "prof")
    cfg = str(tmp_path / "cfg")
    cb = dynprof.mindspore.DynamicProfilerMonitor(cfg_path=cfg,
                                                  output_path=out,
                                                  poll_interval=5)
    # Rank 0 creates MindSpore's default profiler_config.json for the agent.
    with open(os.path.join(cfg, "profiler_config.json")) as f:
        assert json.load(f) == dynprof.mindspore.DEFAULT_CONFIG
    seg = env.segment()
    seg.write([W(1, 3, 5, aicore_metrics=2, profiler_level=1,
                 profile_framework=0, analyse_mode=0,
                 profile_communication=1, parallel_strategy=0, with_stack=1,
                 data_simplification=0),
               W(2, 8, 8, profiler_level=2, profile_framework=1,
                 analyse_mode=1),
               W(3, 10, 11)])
    train(cb, 1, 12)
    cb.on_train_end(None)
    seg.close()
    d1 = os.path.join(out, "rank0_start3_stop5")
    d2 = os.path.join(out, "rank0_start8_stop8")
    d3 = os.path.join(out, "rank0_start10_stop11")
    assert calls_between(None, None) == [
        (("step_begin", 3), "Profiler", dict(
            output_path=d1, start_profile=False, aicore_metrics=2,
            profiler_level=L.Level1, profile_framework="time",
            profile_communication=True, parallel_strategy=False,
            with_stack=True, data_simplification=False)),
        (("step_begin", 3), "start"),
        (("step_end", 5), "stop"),
        (("step_end", 5), "analyse", {"mode": "sync"}),
        (("step_begin", 8), "Profiler", dict(
            output_path=d2, start_profile=False, aicore_metrics=-1,
            profiler_level=L.Level2, profile_framework="all",
            profile_communication=False, parallel_strategy=False,
            with_stack=False, data_simplification=True)),
        (("step_begin", 8), "start"),
        (("step_end", 8), "stop"),
        (("step_end", 8), "analyse", {"mode": "async"}),
        (("step_begin", 10), "Profiler", dict(
            output_path=d3, start_profile=False, aicore_metrics=-1,
            profiler_level=None, profile_framework=None,
            profile_communication=False, parallel_strategy=False,
            with_stack=False, data_simplification=True)),
        (("step_begin", 10), "start"),
        (("step_end", 11), "stop"),
        (("step_end", 11), "finalize"),
    ]
    for d in (d1, d2, d3):
        assert os.path.isdir(d)


def test_train_end_inside_a_window_stops_and_finalizes(env, tmp_path):
    cb = dynprof.mindspore.DynamicProfilerMonitor(str(tmp_path / "cfg"),
                                                  str(tmp_path / "out"))
    seg = env.segment()
    seg.write([W(1, 2, 50, analyse_mode=0)])
    train(cb, 1, 4)
    msprof.CALLS.append(("step_end", "train_end"))
    cb.on_train_end(None)
    cb.on_train_end(None)           # idempotent
    seg.close()
    assert [c[:2] for c in calls_between(None, None)] == [
        (("step_begin", 2), "Profiler"), (("step_begin", 2), "start"),
        (("step_end", "train_end"), "stop"),
        (("step_end", "train_end"), "finalize")]


def test_rank_from_mindspore_and_custom_loop(env, tmp_path):
    mindspore.communication.RANK_FOR_TEST = 3
    cfg = str(tmp_path / "cfg")
    cb = dynprof.mindspore.DynamicProfilerMonitor(cfg, str(tmp_path / "out"))
    assert cb.monitor.rank == 3
    assert not os.path.exists(cfg)          # only rank 0 writes the default
    seg = env.segment()
    seg.write([W(1, 2, 3, ranks="3")])
    for n in range(1, 6):
        msprof.CALLS.append(("step_begin", n))
        cb.step()
    msprof.CALLS.append(("step_end", "close"))
    cb.close()
    seg.close()
    d = os.path.join(str(tmp_path / "out"), "rank3_start2_stop3")
    assert [c[:2] for c in calls_between(None, None)] == [
        (("step_begin", 2), "Profiler"), (("step_begin", 2), "start"),
        (("step_begin", 4), "stop"), (("step_begin", 4), "finalize")]
    assert calls_between(None, None)[0][2]["output_path"] == d


def test_mark_comm_keeps_busy_time(env, tmp_path):
    """The drop-in offers mark_comm(): each step's time from its beginning to
    the mark lands in the rank's slot; closed, it is a no-op."""
    import time
    mindspore.communication.RANK_FOR_TEST = 2
    cb = dynprof.mindspore.DynamicProfilerMonitor(str(tmp_path / "cfg"),
                                                  str(tmp_path / "out"))
    seg = env.segment()
    slot = seg.slot_of(os.getpid())
    cb.step()
    cb.mark_comm()                  # timing from the next step on
    for n in range(3):
        cb.step()
        time.sleep(0.003)
        cb.mark_comm()
    assert slot.busy_count == 3
    assert slot.busy_last_ns >= 3000000
    del slot
    cb.close()
    cb.mark_comm()
    seg.close()


@pytest.mark.parametrize("where", ["init", "start", "stop"])
def test_profiler_failure_fails_the_window_not_training(env, tmp_path, where):
    sink = env.listen()
    msprof.FAIL[where] = RuntimeError("Ascend device busy")
    cb = dynprof.mindspore.DynamicProfilerMonitor(str(tmp_path / "cfg"),
                                                  str(tmp_path / "out"))
    seg = env.segment()
    seg.write([W(1, 2, 3), W(2, 5, 6)])
    train(cb, 1, 8)
    cb.on_train_end(None)
    seg.close()
    sink.wait_for(lambda e: e.get("kind") == EVENT_DETACHED)
    failed = [e for e in sink.events if e["kind"] == EVENT_FAILED]
    # Both windows fail the same way; training went on to step 8.
    assert [e["window_id"] for e in failed] == [1, 2]
    what = "on_stop" if where == "stop" else "on_start"
    assert failed[0]["error"] == what + ": RuntimeError: Ascend device busy"
    assert ("step_end", 8) in msprof.CALLS


def test_unattachable_monitor_is_inert(env, tmp_path, monkeypatch):
    monkeypatch.setenv("DYNPROF_JOB", "bad/job")
    with pytest.warns(RuntimeWarning, match="dynamic profiling disabled"):
        cb = dynprof.mindspore.DynamicProfilerMonitor(str(tmp_path / "cfg"))
    assert cb.monitor is None
    train(cb, 1, 3)
    cb.step()
    cb.on_train_end(None)
    assert calls_between(None, None) == []


def test_constructor_checks_like_mindspore(env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError):
        dynprof.mindspore.DynamicProfilerMonitor(cfg_path=None)
    cb = dynprof.mindspore.DynamicProfilerMonitor(str(tmp_path), 42,
                                                  unknown_kwarg=1)
    assert cb._output_path == "./dyn_profile_data"
    cb.close()
