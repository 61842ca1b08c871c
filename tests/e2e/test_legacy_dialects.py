#!/usr/bin/python3
"""Legacy jobs (docs/legacy.md) in every dialect: the real coordinator and an
agent with --legacy-dir.  Job directories appear and go (inotify); each job's
dialect is found from the keys of the config its framework wrote, or from
dynprof.dialect; every file the agent writes is checked by a reader written
here from each framework's documented format (../shared/reference/README.md:
keys, types, the shared-memory record the framework packs it into, the mtime
rules), not from dynprof's options table.  Refusals and bad input show in the
job's status, and nothing is written for them."""

import json
import os
import stat
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, Failure, check, log, main, wait_for  # noqa: E402

PID = os.getpid()

# --- readers: each framework's side, from its documented format ---------------

MS_AICORE = range(-1, 6)
MS_LEVEL = range(-1, 3)
# What each framework makes of an aicore metrics number: 2.4 hands it to its
# Profiler, numbered as below; 2.5-2.7 convert it themselves
# (_convert_aic_metrics: 0 is PipeUtilization there).
MS24_AIC = {-1: "AiCoreNone", 0: "ArithmeticUtilization", 1: "PipeUtilization",
            2: "Memory", 3: "MemoryL0", 4: "ResourceConflictRatio",
            5: "MemoryUB"}
MS25_AIC = {-1: "AiCoreNone", 0: "PipeUtilization", 1: "ArithmeticUtilization",
            2: "Memory", 3: "MemoryL0", 4: "MemoryUB",
            5: "ResourceConflictRatio", 6: "L2Cache", 7: "MemoryAccess"}
MS27_AIC = ("PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0",
            "MemoryUB", "ResourceConflictRatio", "L2Cache", "MemoryAccess",
            "AiCoreNone")
MS27_LEVELS = ("LevelNone", "Level0", "Level1", "Level2")


def need(cond, what):
    if not cond:
        raise Failure("format: " + what)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def read_ms_struct(data, ints, bools, fmt, size):
    """MindSpore 2.4-2.6: DynamicProfilerArgs(**data) then struct.pack(fmt)
    of the fields in order plus is_valid; a field of the wrong type would be
    reset to its default (so a type error here is a lost option)."""
    for k in data:
        need(k in ints or k in bools, "key %r is not a field" % k)
    for k in ints:
        need(is_int(data.get(k, -1)), "%s is not an int: %r" % (k, data.get(k)))
    for k in bools:
        need(isinstance(data.get(k, False), bool), "%s is not a bool" % k)
    values = [data.get(k, -1) for k in ints] + [data.get(k, False)
                                                 for k in bools] + [True]
    rec = struct.pack(fmt, *values)
    need(len(rec) == size, "record of %d bytes, not %d" % (len(rec), size))
    back = struct.unpack(fmt, rec)
    return dict(zip(ints + bools, back))


def read_ms24(data):
    r = read_ms_struct(data, ["start_step", "stop_step", "aicore_metrics",
                              "profiler_level", "profile_framework",
                              "analyse_mode"],
                       ["profile_communication", "parallel_strategy",
                        "with_stack", "data_simplification"], "iiiiii?????", 29)
    need(r["aicore_metrics"] in MS_AICORE, "aicore_metrics range")
    return r


def read_ms25(data):
    return read_ms_struct(data, ["start_step", "stop_step", "aicore_metrics",
                                 "profiler_level", "analyse_mode",
                                 "activities"],
                          ["parallel_strategy", "with_stack",
                           "data_simplification"], "iiiiii????", 28)


def read_ms26(data):
    return read_ms_struct(data, ["start_step", "stop_step", "aic_metrics",
                                 "profiler_level", "analyse_mode", "activities",
                                 "export_type"],
                          ["profile_memory", "mstx", "parallel_strategy",
                           "with_stack", "data_simplification"],
                          "iiiiiii??????", 34)


def read_ms27(data):
    """2.7: the JSON as it is, plus is_valid, NUL-terminated in 1 MiB."""
    d = dict(data, is_valid=True)
    raw = json.dumps(d).encode()
    need(len(raw) < 1024 * 1024 and b"\0" not in raw, "shm JSON size")
    for k in ("start_step", "stop_step"):
        need(is_int(d[k]) and d[k] >= 0, "%s must be an int >= 0" % k)
    for k in ("aic_metrics", "profiler_level", "analyse_mode"):
        need(k not in d or is_int(d[k]) or isinstance(d[k], str), k)
    # 2.7 warns that integers here will not be supported: names, or its own
    # -1 default left as it was.
    for k, names in (("aic_metrics", MS27_AIC),
                     ("profiler_level", MS27_LEVELS)):
        v = d.get(k, -1)
        need(v == -1 or (isinstance(v, str) and v in names),
             "%s: %r is not one of 2.7's names" % (k, v))
    for k in ("parallel_strategy", "with_stack", "data_simplification"):
        need(isinstance(d.get(k, False), bool), k)
    return d


TORCH_LEVELS = ("Level0", "Level1", "Level2", "Level_none")
TORCH_AIC = ("AiCoreNone", "PipeUtilization", "ArithmeticUtilization", "Memory",
             "MemoryL0", "MemoryUB", "ResourceConflictRatio", "L2Cache")


def read_torch(data, mtime):
    """torch_npu: a 4-byte little-endian int mtime, then the JSON with
    is_valid, space-padded to 1 MiB; ConfigContext's parse rules."""
    raw = struct.pack("<I", int(mtime)) + json.dumps(
        dict(data, is_valid=True)).encode()
    need(len(raw) <= 1024 * 1024, "shm record size")
    need(struct.unpack("<I", raw[:4])[0] == int(mtime), "header")
    d = json.loads(raw[4:].decode().lstrip())
    need(is_int(d["start_step"]) and d["start_step"] >= 0, "start_step")
    need(is_int(d["active"]) and d["active"] > 0, "active")
    need(is_int(d.get("warmup", 0)) and d.get("warmup", 0) >= 0, "warmup")
    exp = d.get("experimental_config") or {}
    need(exp.get("profiler_level", "Level0") in TORCH_LEVELS, "profiler_level")
    need(exp.get("aic_metrics", "AiCoreNone") in TORCH_AIC, "aic_metrics")
    need(isinstance(exp.get("data_simplification", True), bool), "simplify")
    need(isinstance(d.get("is_rank", False), bool), "is_rank")
    if d.get("is_rank"):
        need(isinstance(d["rank_list"], list) and all(
            is_int(r) and r >= 0 for r in d["rank_list"]), "rank_list")
    return d


# The framework's own defaults, as each writes them at start-up.
DEFAULTS = {
    "mindspore-2.5": {"start_step": -1, "stop_step": -1, "aicore_metrics": -1,
                      "profiler_level": -1, "analyse_mode": -1, "activities": 0,
                      "parallel_strategy": False, "with_stack": False,
                      "data_simplification": True},
    "mindspore-2.6": {"start_step": -1, "stop_step": -1, "aic_metrics": -1,
                      "profiler_level": -1, "analyse_mode": -1, "activities": 0,
                      "export_type": 0, "profile_memory": False, "mstx": False,
                      "parallel_strategy": False, "with_stack": False,
                      "data_simplification": True},
    "mindspore-2.7": {"start_step": -1, "stop_step": -1, "aic_metrics": -1,
                      "profiler_level": -1, "analyse_mode": -1,
                      "activities": ["CPU", "NPU"], "export_type": ["text"],
                      "profile_memory": False, "mstx": False,
                      "parallel_strategy": False, "with_stack": False,
                      "data_simplification": True, "l2_cache": False,
                      "analyse": True, "record_shapes": False,
                      "prof_path": "./", "mstx_domain_include": [],
                      "mstx_domain_exclude": [], "sys_io": False,
                      "sys_interconnection": False, "host_sys": []},
    "torch_npu": {"activities": ["CPU", "NPU"], "prof_dir": None,
                  "analyse": False, "async_mode": False, "record_shapes": False,
                  "profile_memory": False, "with_stack": False,
                  "with_flops": False, "with_modules": False, "active": 1,
                  "warmup": 0, "start_step": 0, "is_rank": False,
                  "rank_list": [],
                  "experimental_config": {
                      "profiler_level": "Level0", "aic_metrics": "AiCoreNone",
                      "l2_cache": False, "op_attr": False,
                      "gc_detect_threshold": None,
                      "data_simplification": True, "record_op_args": False,
                      "export_type": ["text"], "msprof_tx": False,
                      "mstx": False, "host_sys": [], "mstx_domain_include": [],
                      "mstx_domain_exclude": [], "sys_io": False,
                      "sys_interconnection": False}},
}

OPTIONS = {"aicore_metrics": 1, "profiler_level": 1, "with_stack": True,
           "data_simplification": False, "profile_framework": 1}


def check_first(dialect, data, mtime):
    """The first window, [100, 104] with OPTIONS, read the framework's way."""
    # Requested: PipeUtilization (dynprof's 1) and Level1; received: what the
    # framework's own conversion makes of what was written.
    if dialect == "mindspore-2.4":
        r = read_ms24(data)
        check(MS24_AIC[r["aicore_metrics"]] == "PipeUtilization",
              "2.4 receives %s" % MS24_AIC[r["aicore_metrics"]])
        r["aicore_metrics"] = 1
        check((r["start_step"], r["stop_step"], r["aicore_metrics"],
               r["profiler_level"], r["profile_framework"], r["with_stack"],
               r["data_simplification"]) == (100, 104, 1, 1, 1, True, False),
              "%s: %s" % (dialect, r))
    elif dialect == "mindspore-2.5":
        r = read_ms25(data)
        check((r["start_step"], r["stop_step"], MS25_AIC[r["aicore_metrics"]],
               r["profiler_level"], r["with_stack"], r["data_simplification"],
               r["activities"]) == (100, 104, "PipeUtilization", 1, True,
                                    False, 0), "%s: %s" % (dialect, r))
    elif dialect == "mindspore-2.6":
        r = read_ms26(data)
        check((r["start_step"], r["stop_step"], MS25_AIC[r["aic_metrics"]],
               r["profiler_level"], r["with_stack"],
               r["data_simplification"]) == (100, 104, "PipeUtilization", 1,
                                             True, False),
              "%s: %s" % (dialect, r))
    elif dialect == "mindspore-2.7":
        r = read_ms27(data)
        check((r["start_step"], r["stop_step"], r["aic_metrics"],
               r["profiler_level"], r["with_stack"], r["data_simplification"],
               r["activities"]) == (100, 104, "PipeUtilization", "Level1",
                                    True, False, ["CPU", "NPU"]),
              "%s: %s" % (dialect, r))
    else:
        r = read_torch(data, mtime)
        exp = r["experimental_config"]
        check((r["start_step"], r["active"], r["warmup"], r["is_rank"],
               r["rank_list"], exp["profiler_level"], exp["aic_metrics"],
               exp["data_simplification"], r["with_stack"], r["record_shapes"])
              == (100, 5, 0, True, [0, 1, 2, 5], "Level1", "PipeUtilization",
                  False, True, True), "%s: %s" % (dialect, r))


def torch_trace(tr, rank, cfg):
    """A finished torch_npu trace of rank in directory tr, profiled with
    config cfg: the config's metadata copied into profiler_metadata.json
    (add_metadata_json(key, json.dumps(value)), stored json.loads'd), then
    profiler_info_{rank}.json at the end."""
    os.makedirs(tr, exist_ok=True)
    meta = cfg.get("metadata")
    if isinstance(meta, dict) and meta:
        with open(os.path.join(tr, "profiler_metadata.json"), "w") as f:
            json.dump({k: json.loads(json.dumps(v)) for k, v in meta.items()},
                      f)
    with open(os.path.join(tr, "profiler_info_%d.json" % rank), "w") as f:
        f.write("{}")


def torch_acks(c, ldir, node):
    """torch_npu: a trace is credited to the window whose marker it holds,
    to a rank that window targets only; a trace without a marker leaves the
    window unverified, never observed complete."""
    job = "lg%d-tacks" % PID
    jdir = os.path.join(ldir, job)
    out = os.path.join(node.dir, "out-" + job)
    os.mkdir(out)
    os.mkdir(jdir)
    cfg = dict(DEFAULTS["torch_npu"], prof_dir=out)
    with open(os.path.join(jdir, "profiler_config.json"), "w") as f:
        json.dump(cfg, f)
    wait_for(lambda: (lambda e: e and e["dialect"] == "torch_npu")(
        legacy_of(c, job)), 10, "%s served" % job)

    def ranks():
        return {r["rank"]: r for r in c.status(job).get("ranks", [])}

    wa = c.add_window(job, {"start_step": 100, "stop_step": 104,
                            "ranks": "1"})["id"]
    path = os.path.join(jdir, "profiler_config.json")
    data, _ = wait_file(path, lambda x: x.get("start_step") == 100,
                        "window A written")
    check(data["metadata"] == {"dynprof_window": "dynprof:%s:%d" % (job, wa)},
          "marker: %s" % data.get("metadata"))
    # Rank 0 is not targeted: its trace of this very window is not credited;
    # rank 1's trace of another window (the same second) is not either.
    torch_trace(os.path.join(out, "h_1_0_ascend_pt"), 0, data)
    torch_trace(os.path.join(out, "h_2_1_ascend_pt"), 1, dict(
        data, metadata={"dynprof_window": "dynprof:%s:%d" % (job, wa + 50)}))
    time.sleep(2.5)
    check(ranks() == {}, "credited: %s" % ranks())
    w = window_state(c, job, wa)
    check(w and w["state"] == "written", "window A: %s" % w)
    torch_trace(os.path.join(out, "h_3_1_ascend_pt"), 1, data)
    r = wait_for(lambda: (lambda r: r.get(1) if r.get(1) and r[1]["state"] ==
                          "observed_complete" else None)(ranks()), 10,
                 "rank 1 observed complete")
    check(r["output_dir"] == os.path.join(out, "h_3_1_ascend_pt") and
          set(ranks()) == {1}, "rank 1: %s; %s" % (r, ranks()))
    wait_for(lambda: (lambda w: w is None or w["state"] == "over")(
        window_state(c, job, wa)), 10, "window A over")

    # A trace without a marker (an older torch_npu, a run by hand): never
    # observed complete; the window ends unverified and the next is written.
    wb = c.add_window(job, {"start_step": 200, "stop_step": 201})["id"]
    data, _ = wait_file(path, lambda x: x.get("start_step") == 200,
                        "window B written")
    torch_trace(os.path.join(out, "h_4_0_ascend_pt"), 0, dict(data,
                                                              metadata={}))
    wc = c.add_window(job, {"start_step": 300, "stop_step": 301})["id"]
    w = wait_for(lambda: (lambda w: w if w and w["state"] == "unverified"
                          else None)(window_state(c, job, wb)), 30,
                 "window B unverified")
    check("marker" in w["reason"], "window B: %s" % w)
    check(0 not in ranks(), "rank 0 credited: %s" % ranks())
    wait_file(path, lambda x: x.get("start_step") == 300, "window C written")
    check(window_state(c, job, wc)["state"] == "written", "window C")
    log("torch_npu: traces tied to windows by their marker, targeted ranks "
        "only; an unmarked trace leaves its window unverified")


RANK_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "legacy_torch_rank.py")


def torch_job(c, ldir, node, job):
    """A torch_npu job directory, its file as the framework writes it (its
    prof_dir an output directory of the node's), served.  Returns the
    directory, the output directory and the stop file of its ranks."""
    jdir = os.path.join(ldir, job)
    out = os.path.join(node.dir, "out-" + job)
    os.mkdir(out)
    os.mkdir(jdir)
    stop = os.path.join(node.dir, "stop-" + job)
    with open(os.path.join(jdir, "profiler_config.json"), "w") as f:
        json.dump(dict(DEFAULTS["torch_npu"], prof_dir=out), f)
    wait_for(lambda: (lambda e: e and e["dialect"] == "torch_npu")(
        legacy_of(c, job)), 10, "%s served" % job)
    return jdir, out, stop


def torch_late_missed(c, ldir, node):
    """torch_npu ranks run as its monitor does: a rank that starts after the
    window was written ignores the file until it is written again; a window
    whose start step passed is dropped by every rank, and ends missed with
    the framework's own words instead of holding the next one."""
    job = "lg%d-tlate" % PID
    jdir, out, stop = torch_job(c, ldir, node, job)
    rate, t0 = 10.0, time.time()
    procs = [subprocess.Popen([sys.executable, RANK_PY, jdir, "0", str(rate),
                               str(t0), stop])]
    try:
        def ranks():
            return {r["rank"]: r for r in c.status(job).get("ranks", [])}

        # Window A, 15 s ahead; rank 1 starts once it is in the file.
        path = os.path.join(jdir, "profiler_config.json")
        wa = c.add_window(job, {"start_step": 150, "stop_step": 151})["id"]
        wait_file(path, lambda x: x.get("start_step") == 150,
                  "window A written")
        time.sleep(1.1)     # rank 1's start: a later second than the file
        procs.append(subprocess.Popen([sys.executable, RANK_PY, jdir, "1",
                                       str(rate), str(t0), stop]))
        w = wait_for(lambda: (lambda w: w if w and "started after it" in
                              (w["reason"] or "") else None)(
            window_state(c, job, wa)), 10, "rank 1 seen late")
        check(w["state"] == "written", "window A: %s" % w)
        wait_for(lambda: (lambda r: r if all(
            k in r and r[k]["state"] == "observed_complete" for k in (0, 1))
            else None)(ranks()), 40, "ranks 0 and 1 observed complete")
        log("torch_npu: a rank started after the write served by writing "
            "it again")

        # Window B's start passed long ago: both ranks drop it, it ends
        # missed, and window C goes out and is profiled.
        wb = c.add_window(job, {"start_step": 20, "stop_step": 21})["id"]
        step_now = int((time.time() - t0) * rate)
        wc = c.add_window(job, {"start_step": step_now + 200,
                                "stop_step": step_now + 201})["id"]
        w = wait_for(lambda: (lambda w: w if w and w["state"] == "missed"
                              else None)(window_state(c, job, wb)), 30,
                     "window B missed")
        check("start step 20 had passed" in (w["reason"] or ""),
              "window B: %s" % w)
        wait_file(path, lambda x: x.get("start_step") == step_now + 200,
                  "window C written")
        wait_for(lambda: (lambda r: r if all(
            k in r and r[k]["window"] == wc and r[k]["state"] ==
            "observed_complete" for k in (0, 1)) else None)(ranks()), 60,
                 "window C observed complete on ranks 0 and 1")
        log("torch_npu: a window whose start passed ends missed, the next "
            "goes")
    finally:
        open(stop, "w").close()
        for p in procs:
            p.wait(timeout=10)


def read_config(path):
    st = os.stat(path)
    with open(path) as f:
        return json.load(f), st.st_mtime


def legacy_of(c, job):
    """The job's "legacy" summary, read as one node's report (this test has
    one node): its dialect, its error, each window's state and reason."""
    code, st = c.http("GET", "/v1/jobs/%s" % job)
    lg = st.get("legacy") if code == 200 else None
    if lg is None:
        return None
    check(lg["nodes"] == 1 and sum(lg["dialects"].values()) == 1 and
          lg["nodes_in_error"] == len(lg["errors"]) <= 1, "legacy: %s" % lg)
    windows = []
    for w in lg["windows"]:
        states = [k for k, n in w["nodes"].items() if n]
        check(len(states) == 1 and w["nodes"][states[0]] == 1,
              "window counts %s" % w)
        windows.append({"id": w["id"], "state": states[0],
                        "reason": w["reason"]})
    return {"dialect": list(lg["dialects"])[0],
            "error": lg["errors"][0]["error"] if lg["errors"] else None,
            "windows": windows}


def error_is(c, job, what):
    """The job's legacy report if its error says what, else None."""
    e = legacy_of(c, job)
    return e if e and what in (e["error"] or "") else None


def window_state(c, job, wid):
    e = legacy_of(c, job)
    for w in (e or {}).get("windows", []):
        if w["id"] == wid:
            return w
    return None


def wait_file(path, pred, what, timeout=15):
    def cond():
        try:
            d, m = read_config(path)
        except (OSError, ValueError):
            return None
        return (d, m) if pred(d) else None
    return wait_for(cond, timeout, what, interval=0.05)


RECORDS = {  # MindSpore's shared-memory record: fields in order, struct
    "mindspore-2.5": (["start_step", "stop_step", "aicore_metrics",
                       "profiler_level", "analyse_mode", "activities",
                       "parallel_strategy", "with_stack",
                       "data_simplification", "is_valid"], "iiiiii????"),
    "mindspore-2.6": (["start_step", "stop_step", "aic_metrics",
                       "profiler_level", "analyse_mode", "activities",
                       "export_type", "profile_memory", "mstx",
                       "parallel_strategy", "with_stack",
                       "data_simplification", "is_valid"], "iiiiiii??????"),
}


def records(c, ldir):
    """--legacy-shm: a job's own record, made by its framework while it runs
    (here by a stand-in that maps it), gets each window, in its layout."""
    holders, paths = [], []
    try:
        for k, (d, (fields, fmt)) in enumerate(sorted(RECORDS.items())):
            job = "lg%d-rec%d" % (PID, k)
            jdir = os.path.join(ldir, job)
            os.mkdir(jdir)
            with open(os.path.join(jdir, "dynprof.dialect"), "w") as f:
                f.write(d + "\n")
            wait_for(lambda: (lambda e: e and e["dialect"] == d)(
                legacy_of(c, job)), 10, "%s served" % job)
            path = "/dev/shm/DynamicProfileShm%08d%02d" % (PID, k)
            paths += [path, path + ".held"]
            with open(path, "wb") as f:
                f.write(b"\0" * struct.calcsize(fmt))
            os.chmod(path, 0o600)
            holders.append(subprocess.Popen([sys.executable, "-c", (
                "import mmap, sys, time\n"
                "f = open(sys.argv[1], 'r+b')\n"
                "m = mmap.mmap(f.fileno(), %d)\n"
                "open(sys.argv[2], 'w').close(); time.sleep(60)") %
                struct.calcsize(fmt), path, path + ".held"]))
            wait_for(lambda: os.path.exists(path + ".held"), 10, "mapped")
            c.add_window(job, {"start_step": 700, "stop_step": 702,
                               "options": {"profiler_level": 2,
                                           "with_stack": True}})
            rec = wait_for(lambda: (lambda b: b if b[:4] != b"\0" * 4
                                    else None)(open(path, "rb").read()), 10,
                           "%s: record written" % d)
            r = dict(zip(fields, struct.unpack(fmt, rec)))
            check(r["start_step"] == 700 and r["stop_step"] == 702 and
                  r["profiler_level"] == 2 and r["with_stack"] is True and
                  r["data_simplification"] is True and r["is_valid"] is True
                  and r["parallel_strategy"] is False, "%s: %s" % (d, r))
            w = wait_for(lambda: window_state(c, job, 1), 10, "status")
            wait_for(lambda: (lambda w: w and "also written to " +
                              os.path.basename(path) in (w["reason"] or ""))(
                window_state(c, job, 1)), 10, "%s: status %s" % (d, w))
    finally:
        for h in holders:
            h.kill()
            h.wait()
        for p in paths:
            if os.path.exists(p):
                os.unlink(p)
    log("MindSpore 2.5 and 2.6 records written, read back in their layouts")


def unwritable(path):
    """Makes directory path unwritable to the agent (chmod for a user; for
    root, the immutable attribute, or where the file system has none, a
    read-only bind mount of it on itself); returns how to undo it.  Root
    always has one of the two: neither is a failure, not a skip."""
    if os.geteuid() != 0:
        os.chmod(path, 0o555)
        return lambda: os.chmod(path, 0o755)
    p = subprocess.run(["chattr", "+i", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode == 0:
        return lambda: subprocess.call(["chattr", "-i", path])
    why = "chattr +i: %s" % p.stdout.strip()
    p = subprocess.run(["mount", "--bind", path, path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode == 0:
        q = subprocess.run(["mount", "-o", "remount,bind,ro", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if q.returncode == 0:
            return lambda: subprocess.call(["umount", path])
        subprocess.call(["umount", path])
        p = q
    raise Failure("root cannot make %s unwritable: %s; read-only bind mount: "
                  "%s" % (path, why, p.stdout.strip()))


def foreign_record(c, job, wid):
    """A MindSpore 2.4 shared-memory record of another user's, mapped by a
    live process, made while the job runs: never written (--legacy-shm)."""
    path = "/dev/shm/DynamicProfileShm%010d" % PID
    rec = struct.pack("iiiiii?????", -1, -1, -1, -1, -1, -1, False, False,
                      False, True, False)
    with open(path, "wb") as f:
        f.write(rec)
    os.chmod(path, 0o600)
    os.chown(path, 12345, 12345)
    ready = path + ".held"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import mmap, sys, time\n"
        "f = open(sys.argv[1], 'r+b'); m = mmap.mmap(f.fileno(), 29)\n"
        "open(sys.argv[2], 'w').close(); time.sleep(60)"), path, ready])
    try:
        wait_for(lambda: os.path.exists(ready), 10, "record mapped")
        c.http("DELETE", "/v1/jobs/%s/windows/%d" % (job, wid))
        nw = c.add_window(job, {"start_step": 600, "stop_step": 601})["id"]
        w = wait_for(lambda: (lambda w: w if w and w["state"] == "written"
                              else None)(window_state(c, job, nw)), 10,
                     "2.4: window %d written" % nw)
        check("is not the job's user's: not written" in (w["reason"] or ""),
              "foreign record: %s" % w)
        with open(path, "rb") as f:
            check(f.read() == rec, "a foreign record was written")
    finally:
        holder.kill()
        holder.wait()
        for p in (path, ready):
            if os.path.exists(p):
                os.unlink(p)
    log("another user's shared-memory record left alone")


def test():
    with Cluster("legacy") as c:
        c.start_coordinator()
        node = c.node("n1")
        ldir = node.legacy_dir()
        conf = os.path.join(node.dir, "agent.conf")
        with open(conf, "w") as f:
            f.write("# as a site's config file would\nlegacy-dir = %s\n"
                    "legacy-shm = yes\n" % ldir)
        node.start_agent(["--conf", conf])

        dialects = ["mindspore-2.4", "mindspore-2.5", "mindspore-2.6",
                    "mindspore-2.7", "torch_npu"]
        jobs, fw_mtime, outs = {}, {}, {}
        for d in dialects:
            job = "lg%d-%s" % (PID, d.replace(".", ""))
            jdir = os.path.join(ldir, job)
            out = os.path.join(node.dir, "out-" + job)
            os.mkdir(out)
            os.mkdir(jdir)
            if d.startswith("mindspore"):
                with open(os.path.join(jdir, "dynprof.output"), "w") as f:
                    f.write(out + "\n")
            if d == "mindspore-2.4":
                # Named: no file yet.
                with open(os.path.join(jdir, "dynprof.dialect"), "w") as f:
                    f.write(d + "\n")
            else:
                cfg = dict(DEFAULTS[d])
                if d == "torch_npu":
                    cfg["prof_dir"] = out
                with open(os.path.join(jdir, "profiler_config.json"), "w") as f:
                    json.dump(cfg, f)
                fw_mtime[d] = os.stat(os.path.join(
                    jdir, "profiler_config.json")).st_mtime
            jobs[d] = (job, jdir)
            outs[d] = out

        # Each job appears (inotify) with the dialect its keys say.
        for d, (job, _) in jobs.items():
            e = wait_for(lambda: (lambda e: e if e and e["dialect"] == d
                                  else None)(legacy_of(c, job)), 15,
                         "%s served as %s" % (job, d))
            check(e["error"] is None, "%s: error %s" % (job, e["error"]))
        log("five jobs served, dialects detected")
        time.sleep(1.1)     # the framework's own file: a whole second older

        first = {}
        for d, (job, jdir) in jobs.items():
            body = {"start_step": 100, "stop_step": 104, "options": OPTIONS}
            if d == "torch_npu":
                body["ranks"] = "0-2,5"
                body["options"] = dict(OPTIONS, record_shapes=True)
            first[d] = c.add_window(job, body)["id"]
        for d, (job, jdir) in jobs.items():
            path = os.path.join(jdir, "profiler_config.json")
            data, mtime = wait_file(path, lambda x: x.get("start_step") == 100,
                                    "%s: window written" % d)
            check_first(d, data, mtime)
            if d != "mindspore-2.4":
                check(int(mtime) > int(fw_mtime[d]), "%s: mtime %.3f not in a "
                      "later second than the framework's %.3f" % (
                          d, mtime, fw_mtime[d]))
            w = wait_for(lambda: (lambda w: w if w and w["state"] == "written"
                                  else None)(window_state(c, job, first[d])),
                         10, "%s: window 1 written in status" % d)
            if d not in ("mindspore-2.4",):
                check("profile_framework" in (w["reason"] or ""),
                      "%s: left-out option not said: %s" % (d, w))
            jobs[d] = (job, jdir, mtime)
        log("window 1 written and read back in every dialect")

        # One window at a time; ranks refused on MindSpore.
        second = {}
        for d, (job, jdir, _) in jobs.items():
            second[d] = c.add_window(job, {"start_step": 200,
                                           "stop_step": 201})["id"]
            if d.startswith("mindspore"):
                # Refused at once: MindSpore cannot target ranks.
                code, body = c.http("POST", "/v1/jobs/%s/windows" % job,
                                    {"start_step": 300, "stop_step": 301,
                                     "ranks": "0-3"})
                check(code == 409 and body.get("field") == "ranks" and
                      "cannot target ranks" in body.get("error", ""),
                      "%s: ranks window: %s %s" % (d, code, body))
        for d, (job, jdir, _) in jobs.items():
            w = wait_for(lambda: (lambda w: w if w and w["state"] == "waiting"
                                  else None)(window_state(c, job, second[d])),
                         10, "%s: window 2 waiting" % d)
            check("one window at a time" in w["reason"], "%s: %s" % (d, w))
            data, _ = read_config(os.path.join(jdir, "profiler_config.json"))
            check(data["start_step"] == 100, "%s: rewritten early" % d)
        log("one window at a time; rank targeting refused on MindSpore")

        # Cancelling the first writes the second: a later whole second.
        for d, (job, jdir, m1) in jobs.items():
            code, _ = c.http("DELETE", "/v1/jobs/%s/windows/%d" % (job, first[d]))
            check(code == 200, "cancel: %s" % code)
        for d, (job, jdir, m1) in jobs.items():
            path = os.path.join(jdir, "profiler_config.json")
            data, m2 = wait_file(path, lambda x: x.get("start_step") == 200,
                                 "%s: window 2 written" % d)
            check(int(m2) > int(m1) and m2 - m1 >= 1.0,
                  "%s: mtimes %.3f then %.3f" % (d, m1, m2))
            if d == "torch_npu":
                r = read_torch(data, m2)
                check(r["active"] == 2 and r["is_rank"] is False and
                      r["rank_list"] == [], "torch_npu: %s" % r)
            else:
                {"mindspore-2.4": read_ms24, "mindspore-2.5": read_ms25,
                 "mindspore-2.6": read_ms26,
                 "mindspore-2.7": read_ms27}[d](data)
                check(data["stop_step"] == 201, "%s: %s" % (d, data))
        log("after the cancel, window 2 written a whole second later")

        # What the jobs did, seen in their output directories.
        def rank_state(job, rank):
            for r in c.status(job).get("ranks", []):
                if r["rank"] == rank:
                    return r
            return None

        job = jobs["mindspore-2.5"][0]
        tr = os.path.join(outs["mindspore-2.5"], "rank3_start200_stop201")
        os.mkdir(os.path.join(outs["mindspore-2.5"], "rank3_start100_stop104"))
        os.makedirs(os.path.join(tr, "x_ascend_ms"))
        r = wait_for(lambda: (lambda r: r if r and r["state"] == "observed"
                              else None)(rank_state(job, 3)), 10,
                     "2.5: rank 3 observed")
        check(r["output_dir"] == tr and not rank_state(job, 0),
              "2.5: %s" % r)
        with open(os.path.join(tr, "x_ascend_ms", "profiler_info_3.json"),
                  "w") as f:
            f.write("{}")
        wait_for(lambda: (lambda r: r if r and r["state"] ==
                          "observed_complete" else None)(rank_state(job, 3)),
                 10, "2.5: rank 3 observed complete")
        job = jobs["torch_npu"][0]
        tr = os.path.join(outs["torch_npu"], "node1_4242_20261203_ascend_pt")
        os.makedirs(os.path.join(tr, "FRAMEWORK"))
        data, _ = read_config(os.path.join(jobs["torch_npu"][1],
                                           "profiler_config.json"))
        torch_trace(tr, 2, data)
        r = wait_for(lambda: (lambda r: r if r and r["state"] ==
                              "observed_complete" else None)(
            rank_state(job, 2)), 10, "torch_npu: rank 2 observed complete")
        check([e["kind"] for e in r["events"]] == ["observed",
                                                   "observed_complete"],
              "torch_npu events %s" % r["events"])
        for d in ("mindspore-2.5", "torch_npu"):
            wait_for(lambda: (lambda w: w is None or w["state"] == "over")(
                window_state(c, jobs[d][0], second[d])),
                     10, "%s: window 2 over once observed complete" % d)
        log("traces observed, then observed complete; their windows over")

        # Relative windows need progress these jobs never report.
        job = jobs["mindspore-2.5"][0]
        code, body = c.http("POST", "/v1/jobs/%s/windows" % job,
                            {"in_steps": 10, "steps": 2})
        check(code == 409 and body.get("field") == "in_steps",
              "relative window: %s %s" % (code, body))

        # Unknown dialect: said, nothing written.
        unk = "lg%d-unknown" % PID
        udir = os.path.join(ldir, unk)
        os.mkdir(udir)
        with open(os.path.join(udir, "profiler_config.json"), "w") as f:
            json.dump({"sample_rate": 3}, f)
        e = wait_for(lambda: error_is(c, unk, "unknown dialect"), 10,
                     "unknown dialect reported")
        check(e["dialect"] == "unknown" and "unknown dialect" in e["error"]
              and "none of mindspore-2.4, mindspore-2.5, mindspore-2.6, "
              "mindspore-2.7 or torch_npu's" in e["error"], "unknown: %s" % e)
        c.add_window(unk, {"start_step": 50, "stop_step": 51})
        time.sleep(1.5)
        with open(os.path.join(udir, "profiler_config.json")) as f:
            check(json.load(f) == {"sample_rate": 3}, "unknown: file written")
        w = window_state(c, unk, 1)
        check(w and w["state"] == "waiting" and "unknown" in w["reason"],
              "unknown: window %s" % w)

        # Bad input: a bad name, a directory and a FIFO in place of the file.
        os.mkdir(os.path.join(ldir, "bad name!"))
        bad = {}
        for kind in ("dir", "fifo"):
            job = "lg%d-bad%s" % (PID, kind)
            jdir = os.path.join(ldir, job)
            os.mkdir(jdir)
            with open(os.path.join(jdir, "dynprof.dialect"), "w") as f:
                f.write("mindspore-2.5\n")
            cfg = os.path.join(jdir, "profiler_config.json")
            if kind == "dir":
                os.mkdir(cfg)
            else:
                os.mkfifo(cfg)
            bad[kind] = job
        for kind, job in bad.items():
            want = "a directory" if kind == "dir" else "a FIFO"
            wait_for(lambda: error_is(c, job, want), 10, "%s reported" % job)
            c.add_window(job, {"start_step": 50, "stop_step": 51})
        time.sleep(1.5)
        check(stat.S_ISDIR(os.stat(os.path.join(ldir, bad["dir"],
                                                "profiler_config.json")).st_mode)
              and stat.S_ISFIFO(os.stat(os.path.join(
                  ldir, bad["fifo"], "profiler_config.json")).st_mode),
              "a directory or FIFO was replaced")
        # Not job directories: a symbolic link and a plain file, each
        # said once in the agent's log, neither served.
        os.symlink(os.path.join(ldir, bad["dir"]),
                   os.path.join(ldir, "lg%d-link" % PID))
        with open(os.path.join(ldir, "lg%d-file" % PID), "w") as f:
            f.write("x\n")
        for name, what in (("link", "a symbolic link"),
                           ("file", "a plain file")):
            line = "lg%d-%s: %s, not a job directory: ignored" % (PID, name,
                                                                  what)
            wait_for(lambda: line in node.agent.output(), 10, line)
        # A symbolic link for the config is never replaced, and the window
        # says why it is not written; a relative dynprof.output and a
        # dialect with a NUL byte are the job's errors.
        job = "lg%d-cfglink" % PID
        jdir = os.path.join(ldir, job)
        os.mkdir(jdir)
        with open(os.path.join(jdir, "dynprof.dialect"), "w") as f:
            f.write("mindspore-2.5\n")
        target = os.path.join(ldir, "lg%d-target.json" % PID)
        with open(target, "w") as f:
            f.write("{}\n")
        os.symlink(target, os.path.join(jdir, "profiler_config.json"))
        wid = c.add_window(job, {"start_step": 50, "stop_step": 51})["id"]
        w = wait_for(lambda: (lambda w: w if w and "not written" in
                              w["reason"] else None)(window_state(c, job, wid)),
                     10, "a symlinked config's window says why")
        check("symbolic link" in w["reason"], "reason %s" % w)
        with open(target) as f:
            check(f.read() == "{}\n", "the symlink's target was written")
        for name, text, what in (("relout", "mindspore-2.5\n",
                                  "dynprof.output: not an absolute path"),
                                 ("nul", "torch_npu\0", "dynprof.dialect: "
                                  "holds a NUL byte")):
            job = "lg%d-%s" % (PID, name)
            jdir = os.path.join(ldir, job)
            os.mkdir(jdir)
            if name == "relout":
                with open(os.path.join(jdir, "dynprof.output"), "w") as f:
                    f.write("relative/dir\n")
            with open(os.path.join(jdir, "dynprof.dialect"), "w") as f:
                f.write(text)
            wait_for(lambda: error_is(c, job, what), 10, what)
        log_text = node.agent.output()
        for name in ("link", "file"):
            check(log_text.count("lg%d-%s: " % (PID, name)) == 1,
                  "lg%d-%s said more than once" % (PID, name))
            code, _ = c.http("GET", "/v1/jobs/lg%d-%s" % (PID, name))
            check(code != 200, "lg%d-%s became a job" % (PID, name))
        job = "lg%d-ro" % PID
        jdir = os.path.join(ldir, job)
        os.mkdir(jdir)
        with open(os.path.join(jdir, "dynprof.dialect"), "w") as f:
            f.write("mindspore-2.6\n")
        undo = unwritable(jdir)
        try:
            c.add_window(job, {"start_step": 50, "stop_step": 51})
            wait_for(lambda: error_is(c, job, "cannot write"), 10,
                     "unwritable directory reported")
            check(not os.path.exists(os.path.join(
                jdir, "profiler_config.json")), "written anyway")
        finally:
            undo()
        if os.geteuid() == 0:
            foreign_record(c, jobs["mindspore-2.4"][0], second["mindspore-2.4"])
        check(node.agent.alive(), "the agent died on bad input")
        code, _ = c.http("GET", "/v1/jobs/bad%20name!")
        check(code != 200, "a bad directory name became a job")
        log("bad input reported, nothing replaced, the agent alive")

        # The others kept working: a third window for the 2.6 job.
        job, jdir, _ = jobs["mindspore-2.6"]
        code, _ = c.http("DELETE", "/v1/jobs/%s/windows/%d" % (job, second[
            "mindspore-2.6"]))
        wid = c.add_window(job, {"start_step": 400, "stop_step": 402})["id"]
        wait_file(os.path.join(jdir, "profiler_config.json"),
                  lambda x: x.get("start_step") == 400, "2.6: window 3")

        # A directory going: the job's report goes with it.
        os.rename(jdir, os.path.join(node.dir, "moved-away"))
        wait_for(lambda: legacy_of(c, job) is None, 10,
                 "%s forgotten once its directory went" % job)
        log("a job directory went: its legacy report went too")

        records(c, ldir)
        torch_acks(c, ldir, node)
        torch_late_missed(c, ldir, node)

        # The agent restarts: the jobs come back from their directories and
        # segments, the window in each file stays, and the one that went while
        # it was away is no longer reported.
        job, jdir, _ = jobs["mindspore-2.7"]
        path = os.path.join(jdir, "profiler_config.json")
        before, _ = read_config(path)
        check(node.agent.stop() == 0, "agent stop")
        gone = jobs["torch_npu"][0]
        os.rename(jobs["torch_npu"][1], os.path.join(node.dir, "moved-too"))
        node.start_agent(["--conf", conf])
        w = wait_for(lambda: (lambda w: w if w and w["state"] == "written"
                              else None)(window_state(c, job, second[
                                  "mindspore-2.7"])), 15,
                     "2.7: window 2 written again after the restart")
        after, _ = read_config(path)
        check(after == before, "2.7 file changed: %s -> %s" % (before, after))
        wait_for(lambda: legacy_of(c, gone) is None, 10,
                 "%s forgotten after the restart" % gone)
        log("agent restarted: windows kept, a job gone meanwhile forgotten")


if __name__ == "__main__":
    main(test)
