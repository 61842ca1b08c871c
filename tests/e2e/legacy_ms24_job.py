#!/usr/bin/python3
"""A training job that uses MindSpore 2.4's own DynamicProfilerMonitor, loaded
unmodified from the reference file, with stand-ins for the MindSpore modules it
imports (lib/python/tests/standins).  Its Profiler stand-in writes a trace as
MindSpore's does: the output directory when it starts, profiler/
profiler_info_{rank}.json when it finishes.

usage: legacy_ms24_job.py REFERENCE CFG_PATH OUTPUT_PATH LOG STEPS_PER_SEC MAX_STEPS
    [hourly]

With "hourly" its shared memory has MindSpore's own name (DynamicProfileShm and
the hour), else one of its own.

Every call the monitor makes, and every change of the window it reads from
its shared memory, is a JSON line in LOG, with the step and the hook it came
from; the current step is in LOG.step."""

import importlib.util
import json
import os
import signal
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib", "python", "tests",
                                "standins"))

import mindspore.profiler as msprof  # noqa: E402 (stand-in)

REFERENCE, CFG, OUT, LOG = sys.argv[1:5]
RATE, MAX_STEPS = float(sys.argv[5]), int(sys.argv[6])
HOURLY = sys.argv[7:8] == ["hourly"]
log = open(LOG, "a", buffering=1)
where = {"step": 0, "hook": None}


def record(what, **kw):
    kw.update(what=what, step=where["step"], hook=where["hook"],
              time=time.time())
    log.write(json.dumps(kw, default=str) + "\n")


class TraceProfiler:
    """mindspore.profiler.Profiler as far as the monitor drives it."""

    def __init__(self, output_path, start_profile=False, **kwargs):
        self.out = output_path
        record("Profiler", output_path=output_path, options=kwargs)
        self._ascend_profiler = types.SimpleNamespace(finalize=self._finish)

    def start(self):
        os.makedirs(self.out, exist_ok=True)
        record("start")

    def stop(self):
        record("stop")

    def analyse(self, **kwargs):
        self._finish()

    def _finish(self):
        d = os.path.join(self.out, "profiler")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "profiler_info_0.json"), "w") as f:
            json.dump({"rank_id": 0}, f)
        record("finalize")


class HourlessTime(types.ModuleType):
    """The time module, but the name of the shared memory (after the hour in
    MindSpore) is this job's own."""

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def strftime(fmt, t=None):
        return "DynprofLegacy%d" % os.getpid()


msprof.Profiler = TraceProfiler
spec = importlib.util.spec_from_file_location("ms24_dynamic_profiler",
                                              REFERENCE)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
if not HOURLY:
    mod.time = HourlessTime("time")


class Ctx:
    def __init__(self):
        self.cur_step_num = 0

    def original_args(self):
        return self


signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(0))
mon = mod.DynamicProfilerMonitor(cfg_path=CFG, output_path=OUT)
ctx = Ctx()
seen = None
try:
    for step in range(1, MAX_STEPS + 1):
        where["step"] = ctx.cur_step_num = step
        with open(LOG + ".step.tmp", "w") as f:
            f.write(str(step))
        os.rename(LOG + ".step.tmp", LOG + ".step")
        a = mon._get_prof_args()
        if (a.start_step, a.stop_step) != seen:
            seen = (a.start_step, a.stop_step)
            try:    # when the file it came from was last written
                mtime = os.stat(os.path.join(CFG, "profiler_config.json")).st_mtime
            except OSError:
                mtime = None
            record("seen", start_step=a.start_step, stop_step=a.stop_step,
                   cfg_mtime=mtime)
        where["hook"] = "step_begin"
        mon.step_begin(ctx)
        time.sleep(1.0 / RATE)
        where["hook"] = "step_end"
        mon.step_end(ctx)
        where["hook"] = None
finally:
    mon.on_train_end(ctx)
