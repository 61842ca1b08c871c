#!/usr/bin/python3
"""A simulated training rank in Python: dynprof-train-sim's twin over the Python
binding (dynprof.Monitor, lib/python), for the end-to-end tests.

Same flags, environment, output and exit codes as examples/train_sim.c: it steps
at a steady rate around Monitor.step_begin(n) and step_end(n), and its
"profiler" writes trace.json into the output directory on_start is given (job,
rank, pid, window, framework options, every step it profiled), finished and
closed by on_stop with the reason, so a complete trace.json ends with "}".

Run with PYTHONPATH=<source>/lib/python and DYNPROF_LIBRARY=<build>/lib/libdynprof.so.
Exit codes: 0 after --max-steps or SIGTERM/SIGINT, 1 bad usage, 2 the library
refused to open.
"""

import argparse
import json
import logging
import os
import signal
import sys
import time

try:
    import dynprof
except ImportError as e:
    sys.stderr.write("py_rank: cannot import the dynprof binding (%s); put "
                     "lib/python on PYTHONPATH\n" % e)
    sys.exit(2)

USAGE = """usage: py_rank.py [options]
  --steps-per-sec N  steps a second, 0 = as fast as possible (20)
  --max-steps N      stop after N steps, 0 = run until SIGTERM (0)
  --first-step N     number of the first step, as a job resumed from a
                     checkpoint would (1)
  --poll-ms N        no steps: Monitor.start_poller(N ms), a thread that
                     polls, until SIGTERM (time windows only)
  --job J            job id (DYNPROF_JOB, SLURM_JOB_ID, "default")
  --rank R           rank (RANK, RANK_ID, OMPI_COMM_WORLD_RANK, SLURM_PROCID, 0)
  --output-root DIR  trace root (DYNPROF_OUTPUT_ROOT, ./dyn_profile_data)
  --shm-dir DIR      segment directory (DYNPROF_SHM_DIR, /dev/shm)
  --socket PATH      agent socket (DYNPROF_AGENT_SOCKET)
  -q, --quiet        print only errors and the final rate
  -v, --verbose      also print the library's log messages
  -h, --help
"""

REASONS = {dynprof.StopReason.COMPLETED: "completed",
           dynprof.StopReason.CANCELLED: "cancelled",
           dynprof.StopReason.CLOSED: "closed"}

stop_flag = False


def on_signal(sig, frame):
    global stop_flag
    stop_flag = True


class Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("py_rank: %s\n%s" % (message, USAGE))
        sys.exit(1)


def number(lo, hi):
    def conv(s):
        try:
            v = int(s, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("not a number: %s" % s) from None
        if v < lo or v > hi:
            raise argparse.ArgumentTypeError("not a number from %d to %d: %s" %
                                             (lo, hi, s))
        return v
    return conv


def parse(argv):
    p = Parser(add_help=False, usage=argparse.SUPPRESS)
    p.add_argument("--steps-per-sec", type=number(0, 1000000), default=20)
    p.add_argument("--max-steps", type=number(0, (1 << 62) - 1), default=0)
    p.add_argument("--first-step", type=number(1, (1 << 62) - 1), default=1)
    p.add_argument("--poll-ms", type=number(1, 60000))
    p.add_argument("--job")
    p.add_argument("--rank", type=number(0, (1 << 31) - 1))
    p.add_argument("--output-root")
    p.add_argument("--shm-dir")
    p.add_argument("--socket")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-h", "--help", action="store_true")
    return p.parse_args(argv)


class Profiler:
    """The rank's profiler: trace.json in the window's output directory."""

    def __init__(self, quiet):
        self.quiet = quiet
        self.job = None
        self.rank = None
        self.trace = None
        self.path = None
        self.steps = 0

    def on_start(self, window, options, framework_options, output_dir):
        self.path = os.path.join(output_dir, "trace.json")
        self.trace = open(self.path, "w")
        self.steps = 0
        self.trace.write('{"job": %s, "rank": %d, "pid": %d, "window": %d, '
                         '"start_step": %d, "stop_step": %d, '
                         '"framework_options": %s, "steps": [' % (
                             json.dumps(self.job), self.rank, os.getpid(),
                             window.id, window.start_step, window.stop_step,
                             json.dumps(framework_options)))
        if not self.quiet:
            print("rank %d: started window %d (steps %d-%d) -> %s" % (
                self.rank, window.id, window.start_step, window.stop_step,
                output_dir), flush=True)

    def record(self, step):
        if self.trace is not None:
            self.trace.write("%s%d" % (", " if self.steps else "", step))
            self.steps += 1

    def on_stop(self, window, reason, output_dir):
        if self.trace is None:
            raise RuntimeError("stop without a start")
        why = REASONS.get(reason, "unknown")
        f, self.trace = self.trace, None
        try:
            f.write('], "reason": "%s"}\n' % why)
        finally:
            f.close()
        if not self.quiet:
            print("rank %d: stopped window %d (%s, %d steps traced)" % (
                self.rank, window.id, why, self.steps), flush=True)


def main(argv):
    a = parse(argv)
    if a.help:
        sys.stdout.write(USAGE)
        return 0
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        "rank %s: dynprof: %%(message)s" % ("?" if a.rank is None else a.rank)))
    lg = logging.getLogger("dynprof")
    lg.addHandler(handler)
    lg.setLevel(logging.DEBUG if a.verbose else logging.WARNING)

    prof = Profiler(a.quiet)
    try:
        mon = dynprof.Monitor(job=a.job, rank=a.rank, on_start=prof.on_start,
                              on_stop=prof.on_stop, output_root=a.output_root,
                              shm_dir=a.shm_dir, agent_socket=a.socket)
    except dynprof.DynprofError as e:
        sys.stderr.write("py_rank: %s\n" % e)
        return 2
    prof.job, prof.rank = mon.job, mon.rank
    if not a.quiet:
        print("rank %d: job %s, pid %d, %g steps/s from step %d (python)" % (
            prof.rank, prof.job, os.getpid(), a.steps_per_sec, a.first_step),
            flush=True)

    if a.poll_ms is not None:
        # A process without steps: the poller thread acts on time windows.
        mon.start_poller(a.poll_ms / 1000.0)
        while not stop_flag:
            time.sleep(0.05)
        mon.close()
        print("rank %d: polled" % prof.rank, flush=True)
        return 0
    period = 1.0 / a.steps_per_sec if a.steps_per_sec > 0 else 0.0
    t0 = time.monotonic()
    step = a.first_step
    while not stop_flag:
        if a.max_steps != 0 and step - a.first_step >= a.max_steps:
            break
        if period:
            delay = t0 + (step - a.first_step) * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if stop_flag:
                break
        mon.step_begin(step)
        prof.record(step)
        # The "work" of the step happens here.
        mon.step_end(step)
        step += 1
    elapsed = time.monotonic() - t0
    done = step - a.first_step
    stats = mon.stats
    mon.close()
    print("rank %d: %d steps in %.3f s (%.1f steps/s), events sent %d, "
          "dropped %d" % (prof.rank, done, elapsed,
                          done / elapsed if elapsed > 0 else 0.0,
                          stats["events_sent"], stats["events_dropped"]),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
