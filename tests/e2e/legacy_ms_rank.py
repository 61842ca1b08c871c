#!/usr/bin/python3
"""A MindSpore 2.5-2.7 rank as its DynamicProfilerMonitor behaves
(../shared/reference/README.md and their dynamic_profiler.py), written from
that description, not from their code:

- the poller reads <cfg>/profiler_config.json when its float mtime changes,
  every 2 s (poll_interval's default);
- "callback" (Model.train's step_begin/step_end, every version):
  _check_step drops a window whose start step (or stop step) is already
  behind: logger.error("start_step must be greater than step_num, but get
  start_step = S, stop_step = T, step_num = N") at every step_begin while
  it is in the file; a window is started at step_begin(start) and stopped
  at step_end(stop), print_msg("Rank R Dynamic profiler start at step S,
  will stop at step T");
- "step" (dp.step(), once a step): 2.7 skips a window whose stop step is
  behind (_is_valid_start_stop_step: logger.warning("stop_step must be
  greater than step_num, ...")); 2.5 and 2.6 wait while step < start_step
  and otherwise start at once, late or not; on a new (start, stop) a
  Profiler with schedule(active=stop-start+1, skip_first=1) is made,
  print_msg("Rank R Dynamic profile start at step S, will stop at step T").
- A trace is <output>/rank{R}_start{S}_stop{T}/, with
  x_ascend_ms/profiler_info_{R}.json written when it finishes; TRUE_STEPS
  (a file of the test's) gets a line "S T first last" per trace: the steps
  requested and those profiled.

Where its lines go, LAYOUT: "msrun" (msrun's --log_dir: every line of worker
R, print_msg on stdout and the logger on stderr, in LOGS/worker_R.log) or
"glog" (GLOG_logtostderr=0: the logger's lines in
LOGS/rank_R/logs/mindspore.log; print_msg's on stdout, not kept).

The job's ranks step together (collectives), at STEPS_PER_S from time T0.

usage: legacy_ms_rank.py CFG OUTPUT LOGS LAYOUT RANK VERSION PATH \\
    STEPS_PER_S T0 STOP_FILE TRUE_STEPS"""

import json
import os
import sys
import threading
import time

(cfg_dir, out, logs, layout, rank, version, path, rate, t0, stop,
 true_steps) = (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
                int(sys.argv[5]), sys.argv[6], sys.argv[7],
                float(sys.argv[8]), float(sys.argv[9]), sys.argv[10],
                sys.argv[11])
cfg_path = os.path.join(cfg_dir, "profiler_config.json")
if layout == "msrun":
    os.makedirs(logs, exist_ok=True)
    out_f = err_f = open(os.path.join(logs, "worker_%d.log" % rank), "a",
                         buffering=1)
else:
    os.makedirs(os.path.join(logs, "rank_%d" % rank, "logs"), exist_ok=True)
    err_f = open(os.path.join(logs, "rank_%d" % rank, "logs",
                              "mindspore.log"), "a", buffering=1)
    out_f = open(os.devnull, "w")
lock = threading.Lock()


def logger(level, line, msg):
    """mindspore.log's format."""
    now = time.time()
    err_f.write("[%s] ME(%d:%d,MainProcess):%s.%03d.000 [mindspore/profiler/"
                "dynamic_profiler.py:%d] %s\n" % (
                    level, os.getpid(), threading.get_ident() % 100000,
                    time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(now)),
                    int(now * 1000) % 1000, line, msg))


def print_msg(msg):
    out_f.write("[Dynamic Profiler] " + msg + "\n")


# The record the poller fills: (start, stop, is_valid), -1 none.
shm = {"start": -1, "stop": -1, "valid": False}


def poller():
    last = None
    while not os.path.exists(stop):
        try:
            m = os.path.getmtime(cfg_path)
            if last is None or m != last:
                last = m
                with open(cfg_path) as f:
                    data = json.load(f)
                with lock:
                    shm.update(start=data.get("start_step", -1),
                               stop=data.get("stop_step", -1), valid=True)
        except (OSError, ValueError):
            pass
        time.sleep(2)


def trace(start, stop_step, first, last):
    tr = os.path.join(out, "rank%d_start%d_stop%d" % (rank, start, stop_step))
    os.makedirs(os.path.join(tr, "x_ascend_ms"), exist_ok=True)
    with open(os.path.join(tr, "x_ascend_ms", "profiler_info_%d.json" % rank),
              "w") as f:
        json.dump({"rank": rank}, f)
    with open(true_steps, "a") as f:
        f.write("%d %d %d %d\n" % (start, stop_step, first, last))


def args():
    with lock:
        return shm["start"], shm["stop"], shm["valid"]


# Callback path state (DynamicProfilerMonitorBase).
last_start = last_stop = None
started = None                   # [start, stop, first step]


def check_step(start, stop_step, step):
    if start <= 0 or stop_step <= 0:
        return -1, -1
    if start > stop_step:
        logger("ERROR", 378, "start_step must be less than stop_step, but "
               "get start_step = %d, stop_step = %d" % (start, stop_step))
        return -1, -1
    if start < step and start != last_start:
        logger("ERROR", 383, "start_step must be greater than step_num, but "
               "get start_step = %d, stop_step = %d, step_num = %d" % (
                   start, stop_step, step))
        return -1, -1
    if stop_step < step and stop_step != last_stop:
        logger("ERROR", 388, "stop_step must be greater than step_num, but "
               "get start_step = %d, stop_step = %d, step_num = %d" % (
                   start, stop_step, step))
        return -1, -1
    return start, stop_step


def step_begin(step):
    global last_start, last_stop, started
    start, stop_step, valid = args()
    if not valid or start in (-1, last_start):
        return
    start, stop_step = check_step(start, stop_step, step)
    if step == start:
        if started:
            logger("ERROR", 120, "Dynamic profile is already started")
            return
        print_msg("Rank %d create output path %s" % (rank, os.path.join(
            out, "rank%d_start%d_stop%d" % (rank, start, stop_step))))
        started = [start, stop_step, step]
        last_start, last_stop = start, stop_step
        print_msg("Rank %d Dynamic profiler start at step %d, will stop at "
                  "step %d" % (rank, start, stop_step))


def step_end(step):
    global started
    _, stop_step, valid = args()
    if not valid or stop_step == -1:
        return
    if started and step == last_stop:
        trace(started[0], started[1], started[2], step)
        started = None
        print_msg("Rank %d Dynamic profiler stop at step %d" % (rank, step))


# step() path state.
cur = {"start": -1, "stop": -1}
prof = None                      # [start, stop, skip, active, first]


def step_path(step):
    global prof
    start, stop_step, valid = args()
    if not valid:
        return
    if version == "2.7":
        if start < 0 or stop_step < 0 or step < start:
            return
        if step > stop_step != cur["stop"]:
            logger("WARNING", 343, "stop_step must be greater than step_num, "
                   "but get start_step = %d, stop_step = %d, step_num = %d" %
                   (start, stop_step, step))
            return
    else:
        if start == -1 or stop_step == -1 or step < start:
            return
    if (start, stop_step) != (cur["start"], cur["stop"]):
        cur.update(start=start, stop=stop_step)
        print_msg("Rank %d create output path %s" % (rank, os.path.join(
            out, "rank%d_start%d_stop%d" % (rank, start, stop_step))))
        print_msg("Rank %d Dynamic profile start at step %d, will stop at "
                  "step %d" % (rank, start, stop_step))
        prof = [start, stop_step, 1, stop_step - start + 1, None]
    if prof:
        # schedule(wait=0, warmup=0, active=N, repeat=1, skip_first=1)
        if prof[2] > 0:
            prof[2] -= 1
            return
        if prof[4] is None:
            prof[4] = step
        prof[3] -= 1
        if prof[3] == 0:
            trace(prof[0], prof[1], prof[4], step)
            prof = None


threading.Thread(target=poller, daemon=True).start()
step = int((time.time() - t0) * rate)
while not os.path.exists(stop):
    time.sleep(1.0 / rate)
    while step < int((time.time() - t0) * rate):
        step += 1
        if path == "callback":
            step_begin(step)
            step_end(step)
        else:
            step_path(step)
