"""Parity with MindSpore 2.4 itself: its own DynamicProfilerMonitor (the
reference source, run with the stand-in MindSpore modules) and dynprof's drop-in
(with the real agent in standalone mode) are given the same profiler_config.json
edits and the same steps; the Profiler calls they make, and the steps they make
them at, must be identical.

The reference is MindSpore's file, not part of this tree: $DYNPROF_MS24_REFERENCE,
else ../shared/reference/mindspore_2.4_dynamic_profiler.py beside the source
tree.  Without it the test is skipped."""

import os
import sys
import time
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "standins"))

import mindspore.profiler as msprof               # noqa: E402 (stand-in)

import dynprof.mindspore                          # noqa: E402
from test_agent import Agent, wait_for_window, write_config  # noqa: E402
from test_mindspore import Ctx                    # noqa: E402


def reference_path():
    p = os.environ.get("DYNPROF_MS24_REFERENCE")
    if not p:
        src = os.environ.get("DYNPROF_SOURCE_DIR",
                             os.path.join(HERE, "..", "..", ".."))
        p = os.path.join(src, "..", "shared", "reference",
                         "mindspore_2.4_dynamic_profiler.py")
    if not os.path.exists(p):
        pytest.skip("no MindSpore 2.4 reference at %s" % p)
    return p


def load_reference(path, shm_name):
    with open(path) as f:
        src = f.read()
    mod = types.ModuleType("ms24_dynamic_profiler")
    exec(compile(src, path, "exec"), mod.__dict__)
    # Its shared memory is named after the hour: give this test its own.
    shim = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time)
                                    if not k.startswith("_")})
    shim.strftime = lambda fmt, t=None: shm_name
    mod.time = shim
    return mod


# Two edits of profiler_config.json, each followed by steps.
EDITS = [
    ({"start_step": 3, "stop_step": 5, "aicore_metrics": 1,
      "profiler_level": 1, "profile_framework": 1, "analyse_mode": 0,
      "profile_communication": True, "with_stack": True,
      "data_simplification": False}, range(1, 9)),
    ({"start_step": 12, "stop_step": 13, "profiler_level": 2,
      "profile_framework": 0, "parallel_strategy": True}, range(9, 16)),
]


def drive(cb, cfg_json, wait, out):
    """Applies the edits and runs the steps; returns the calls made, each
    with the step marker it followed, output paths relative to out."""
    msprof.CALLS.clear()
    ctx = Ctx()
    for fields, steps in EDITS:
        write_config(cfg_json, **fields)
        wait(fields)
        for n in steps:
            ctx.cur_step_num = n
            msprof.CALLS.append(("step_begin", n))
            cb.step_begin(ctx)
            msprof.CALLS.append(("step_end", n))
            cb.step_end(ctx)
    msprof.CALLS.append(("train_end",))
    cb.on_train_end(ctx)
    calls = []
    marker = None
    for c in msprof.CALLS:
        if c[0] in ("step_begin", "step_end", "train_end"):
            marker = c
            continue
        if c[0] == "Profiler":
            kw = dict(c[1])
            kw["output_path"] = os.path.relpath(kw["output_path"], out)
            c = ("Profiler", kw)
        calls.append((marker,) + c)
    return calls


def test_same_profiler_calls_as_mindspore_24(env):
    ref = load_reference(reference_path(), "DynprofParity%d" % os.getpid())

    # MindSpore 2.4, polling its file once a second.
    cfg_a = os.path.join(env.dir, "cfg_a")
    out_a = os.path.join(env.dir, "out_a")
    mon = ref.DynamicProfilerMonitor(cfg_path=cfg_a, output_path=out_a,
                                     poll_interval=1)

    def ms_wait(fields):
        deadline = time.monotonic() + 10
        while mon._get_prof_args().start_step != fields["start_step"]:
            assert time.monotonic() < deadline, "MindSpore never loaded it"
            time.sleep(0.01)

    try:
        expected = drive(mon, os.path.join(cfg_a, "profiler_config.json"),
                         ms_wait, out_a)
    finally:
        mon._clean_resource()

    # dynprof: the agent watches the file, the drop-in reads the segment.
    cfg_b = os.path.join(env.dir, "cfg_b")
    out_b = os.path.join(env.dir, "out_b")
    os.mkdir(cfg_b)
    cfg_json = os.path.join(cfg_b, "profiler_config.json")
    agent = Agent(env, cfg_json)
    try:
        cb = dynprof.mindspore.DynamicProfilerMonitor(cfg_path=cfg_b,
                                                      output_path=out_b,
                                                      poll_interval=1)
        got = drive(cb, cfg_json, lambda f: wait_for_window(
            env, f["start_step"], f["stop_step"]), out_b)
    finally:
        agent.stop()

    assert len(expected) == 8       # two windows: Profiler, start, stop, +1
    assert got == expected
