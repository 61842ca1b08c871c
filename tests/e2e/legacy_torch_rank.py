#!/usr/bin/python3
"""A torch_npu rank as its dynamic profiler behaves (../shared/reference/
README.md, torch_npu 26.1.0), written from that description: its log made
at start in <dir>/log/dp_{host}_{pid}_rank_{N}.log; the config published
only when its whole-second mtime is above the monitor's, which starts at the
second the rank started (a file older than the rank is ignored); per step,
a pending config is dropped with "config is not effective" if its start
step passed, started at it, else kept; is_rank/rank_list filter; the trace
written as <prof_dir>/NAME_ascend_pt/ with the config's metadata in
profiler_metadata.json and profiler_info_{N}.json at the end.

The job's ranks step together (collectives), at STEPS_PER_S from time T0.

usage: legacy_torch_rank.py DIR RANK STEPS_PER_S T0 STOP_FILE"""

import json
import os
import socket
import sys
import time

d, rank, rate, t0, stop = sys.argv[1], int(sys.argv[2]), \
    float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
cfg_path = os.path.join(d, "profiler_config.json")
os.makedirs(os.path.join(d, "log"), exist_ok=True)
log = open(os.path.join(d, "log", "dp_%s_%d_rank_%d.log" % (
    socket.gethostname(), os.getpid(), rank)), "a", buffering=1)


def say(level, msg):
    log.write("%s [%s] [%d] dynamic_profile.py: %s\n" % (
        time.strftime("%Y-%m-%d %H:%M:%S"), level, os.getpid(), msg))


cur_time = int(time.time())       # the monitor's, at its creation
step, pending, active, cfg, last_poll = int((time.time() - t0) * rate), \
    None, 0, None, 0.0


def steps():
    """The job's steps, one at a time, as they come."""
    global step
    while not os.path.exists(stop):
        time.sleep(1.0 / rate)
        while step < int((time.time() - t0) * rate):
            step += 1
            yield step


for step in steps():
    now = time.time()
    if now - last_poll >= 1.0:    # the poller's interval
        last_poll = now
        try:
            m = int(os.path.getmtime(cfg_path))
            if m > cur_time:
                with open(cfg_path) as f:
                    data = json.load(f)
                cur_time = m
                ranks = data.get("rank_list") or []
                if not data.get("is_rank") or rank in ranks:
                    pending = data
                else:
                    say("WARNING", "Rank %d not in valid rank_list %s!" % (
                        rank, ranks))
        except (OSError, ValueError):
            pass
    if active:
        active -= 1
        if active == 0:
            tr = os.path.join(cfg["prof_dir"], "%s_%d_%d_ascend_pt" % (
                socket.gethostname(), os.getpid(), step))
            os.makedirs(tr)
            meta = cfg.get("metadata")
            if isinstance(meta, dict) and meta:
                with open(os.path.join(tr, "profiler_metadata.json"),
                          "w") as f:
                    json.dump(meta, f)
            with open(os.path.join(tr, "profiler_info_%d.json" % rank),
                      "w") as f:
                json.dump({"start": cfg["start_step"], "stop": step}, f)
            say("INFO", "Stop Dynamic Profiler at %d step." % step)
        continue
    if pending is not None:
        s = pending.get("start_step", 0)
        if s != -1 and step > s:
            say("WARNING", "Dynamic Profiler config is not effective. The "
                "start_step=%d, current_step=%d" % (s, step))
            pending = None
        elif s == -1 or step == s:
            cfg, pending = pending, None
            active = cfg.get("active", 1)
            say("INFO", "Start Dynamic Profiler at %d step." % step)
