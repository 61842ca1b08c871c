#!/usr/bin/env python3
"""Per-step cost of dynprof's Python binding, side by side with MindSpore 2.4.

usage: python_step.py [--steps N] [--repeats R] [--seed-dir DIR] [--json]

Runs, in one process and interleaved so that they share the machine's noise,
R rounds of N steps with no window scheduled, of:

  seed_ms24          MindSpore 2.4's DynamicProfilerMonitor, step_begin+step_end
                     (its own code, loaded by seed_baseline.py from the reference,
                     with the stand-in MindSpore modules beside it: the figure
                     seed_baseline.py prints as step_overhead_us)
  dropin_ms          dynprof.mindspore.DynamicProfilerMonitor in the same harness
  monitor_begin_end  dynprof.Monitor.step_begin(n) + step_end(n)
  monitor_step       dynprof.Monitor.step()
  monitor_step_mark  dynprof.Monitor.step() + mark_comm() (busy time on: the
                     step stores the clock too, the mark is a C call)
  ctypes_begin_end   Monitor(fast_path=False): a C call per step_begin/step_end

and prints, per variant, the median and spread (min, max) in microseconds per
training step, by wall time (what seed_baseline.py measures) and by the thread's
CPU time (less moved by other processes on a shared machine), and the seed's
median over the variant's.  The library comes from
$DYNPROF_LIBRARY (default: build/lib/libdynprof.so beside this tree); the seed
from --seed-dir (default $DYNPROF_SEED_DIR, else ../shared/anchors/seed_ms24
beside the source tree).  Without the seed, its columns are left out.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGET_US = 0.3


def measure(fn, steps):
    """(wall, thread cpu) microseconds per step over one run of fn."""
    c0 = time.thread_time()
    t0 = time.perf_counter()
    fn(steps)
    t1 = time.perf_counter()
    c1 = time.thread_time()
    return (t1 - t0) / steps * 1e6, (c1 - c0) / steps * 1e6


def seed_loop(mon, Ctx):
    ctx = Ctx()

    def loop(steps):
        for s in range(1, steps + 1):
            ctx.cur_step_num = s
            mon.step_begin(ctx)
            mon.step_end(ctx)
    return loop


def begin_end_loop(mon):
    begin, end = mon.step_begin, mon.step_end
    base = [0]

    def loop(steps):
        b = base[0]
        for s in range(b + 1, b + steps + 1):
            begin(s)
            end(s)
        base[0] = b + steps
    return loop


def step_loop(mon):
    step = mon.step

    def loop(steps):
        for _ in range(steps):
            step()
    return loop


def step_mark_loop(mon):
    step, mark = mon.step, mon.mark_comm
    step()
    mark()                              # the first mark: timing from now on

    def loop(steps):
        for _ in range(steps):
            step()
            mark()
    return loop


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--seed-dir", default=os.environ.get(
        "DYNPROF_SEED_DIR", os.path.join(ROOT, "..", "shared", "anchors",
                                         "seed_ms24")))
    ap.add_argument("--json", action="store_true", help="one JSON object")
    a = ap.parse_args()
    if a.steps < 1 or a.repeats < 1:
        ap.error("--steps and --repeats must be positive")

    os.environ.setdefault("DYNPROF_LIBRARY", os.path.join(
        ROOT, "build", "lib", "libdynprof.so"))
    sys.path.insert(0, os.path.join(ROOT, "lib", "python"))
    tmp = tempfile.mkdtemp(prefix="dpbench")
    # Private segment dir and no agent: events are dropped, as on a node
    # whose agent is away; the step path is the same.
    os.environ["DYNPROF_SHM_DIR"] = tmp
    os.environ["DYNPROF_AGENT_SOCKET"] = os.path.join(tmp, "none.sock")
    os.environ["DYNPROF_JOB"] = "bench-%d" % os.getpid()
    os.environ["DYNPROF_OUTPUT_ROOT"] = os.path.join(tmp, "out")

    variants = {}
    closers = []
    seed_dir = os.path.abspath(a.seed_dir)
    have_seed = os.path.exists(os.path.join(seed_dir, "seed_baseline.py"))
    if have_seed:
        sys.path.insert(0, seed_dir)    # seed_baseline and its stand-ins
        import seed_baseline
        ref = os.path.join(seed_dir, "..", "..", "reference",
                           "mindspore_2.4_dynamic_profiler.py")
        seed = seed_baseline.load_seed(ref)
        # Its shared memory is named after the hour, so that every MindSpore
        # job on the machine shares one: give this run its own, or another
        # run's config (seed_baseline.py's own, in bench/run.sh) lands here.
        shim = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time)
                                        if not k.startswith("_")})
        shim.strftime = lambda fmt, t=None: "DynprofBench%d" % os.getpid()
        seed.time = shim
        with contextlib.redirect_stdout(io.StringIO()):   # its banner
            smon = seed.DynamicProfilerMonitor(
                cfg_path=os.path.join(tmp, "seedcfg"),
                output_path=os.path.join(tmp, "seedout"))
        closers.append(smon._clean_resource)
        deadline = time.monotonic() + 30
        while not smon._get_prof_args().is_valid:   # its poller's first load
            if time.monotonic() > deadline:
                sys.exit("python_step: the seed's poller never loaded")
            time.sleep(0.001)
        variants["seed_ms24"] = seed_loop(smon, seed_baseline.Ctx)

        import dynprof.mindspore
        dmon = dynprof.mindspore.DynamicProfilerMonitor(
            cfg_path=os.path.join(tmp, "cfg"), rank=1)
        if dmon.monitor is None:
            sys.exit("python_step: the drop-in could not attach")
        closers.append(dmon.close)
        variants["dropin_ms"] = seed_loop(dmon, seed_baseline.Ctx)

    import dynprof
    m1 = dynprof.Monitor(rank=2)
    m2 = dynprof.Monitor(rank=3)
    m3 = dynprof.Monitor(rank=4, fast_path=False)
    m4 = dynprof.Monitor(rank=5)
    closers += [m1.close, m2.close, m3.close, m4.close]
    variants["monitor_begin_end"] = begin_end_loop(m1)
    variants["monitor_step"] = step_loop(m2)
    variants["ctypes_begin_end"] = begin_end_loop(m3)
    variants["monitor_step_mark"] = step_mark_loop(m4)

    wall = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    try:
        for name, fn in variants.items():       # warm up
            measure(fn, min(a.steps, 2000))
        for _ in range(a.repeats):
            for name, fn in variants.items():
                w, c = measure(fn, a.steps)
                wall[name].append(w)
                cpu[name].append(c)
    finally:
        for c in closers:
            c()
        shutil.rmtree(tmp, ignore_errors=True)

    out = {"steps": a.steps, "repeats": a.repeats,
           "python": sys.version.split()[0],
           "loadavg": round(os.getloadavg()[0], 2),
           "library": dynprof.library_version(), "variants": {}}
    for name in variants:
        v = {}
        for kind, r in (("wall", wall[name]), ("cpu", cpu[name])):
            v[kind] = {"median_us": round(statistics.median(r), 4),
                       "min_us": round(min(r), 4),
                       "max_us": round(max(r), 4)}
            if have_seed and name != "seed_ms24":
                v[kind]["seed_over_this"] = round(
                    statistics.median(
                        wall["seed_ms24"] if kind == "wall"
                        else cpu["seed_ms24"]) / statistics.median(r), 1)
        out["variants"][name] = v
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print("python_step: %d rounds of %d steps, no window, python %s, "
          "libdynprof %s, load average %.2f on %d cpus" % (
              a.repeats, a.steps, out["python"], out["library"],
              out["loadavg"], os.cpu_count() or 0))
    print("us per step: wall time (perf_counter, as seed_baseline.py) and "
          "thread cpu time; median [min, max]")
    print("%-18s %-24s %-7s %-24s %s" % ("variant", "wall", "seed/x", "cpu",
                                        "seed/x"))
    for name, v in out["variants"].items():
        cols = []
        for kind in ("wall", "cpu"):
            k = v[kind]
            cols.append("%.3f [%.3f, %.3f]" % (k["median_us"], k["min_us"],
                                               k["max_us"]))
            cols.append("%.1fx" % k["seed_over_this"]
                        if "seed_over_this" in k else "-")
        print("%-18s %-24s %-7s %-24s %s" % ((name,) + tuple(cols)))
    be = out["variants"]["monitor_begin_end"]
    print("python_step_us median wall=%.3f cpu=%.3f (step_begin+step_end; "
          "target < %.1f: %s by cpu time)" % (
              be["wall"]["median_us"], be["cpu"]["median_us"], TARGET_US,
              "met" if be["cpu"]["median_us"] < TARGET_US else "NOT met"))
    if not have_seed:
        print("(no seed at %s: MindSpore 2.4 not measured)" % seed_dir)

if __name__ == "__main__":
    main()
