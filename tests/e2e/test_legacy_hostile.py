#!/usr/bin/python3
"""A hostile local user and the root agent's --legacy-dir (docs/legacy.md,
"What each path trusts"): the real coordinator and a root agent, the user a
second uid (setpriv) who may create entries in the legacy directory.

  swap    the user swaps its job directory with a symbolic link to a
          root-owned directory (renameat2 RENAME_EXCHANGE, in a loop, for a
          bounded time) while windows are posted: nothing in that directory
          is created or changed, the agent keeps serving the job, and what it
          writes there is the user's.
  budget  the user makes 2,000 job directories: at most --legacy-per-uid are
          served, none costs a segment, the agent's descriptors stay few, a
          refused one is served once a served one goes, and the ranks of a
          real job still get their segment and their window.
  flood   the user makes, removes, swaps and links names as fast as it can
          for a bounded time: the agent's log grows by a bounded number of
          lines, and the agent still serves a job made afterwards.

Usage: test_legacy_hostile.py swap|budget|flood"""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (SKIP, Cluster, Failure, check, log, main,  # noqa: E402
                     wait_for)

UID = 61022         # the hostile user: no passwd entry needed
PID = os.getpid()

# Run as UID: renameat2(RENAME_EXCHANGE) of each pair, back to back, for a
# bounded time; each pair left as it was found.  Prints the swaps made.
SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
secs = float(sys.argv[1])
pairs = [(sys.argv[i].encode(), sys.argv[i + 1].encode())
         for i in range(2, len(sys.argv), 2)]
flips = [0] * len(pairs)
def swap(k):
    a, b = pairs[k]
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    flips[k] += 1
print("ready", flush=True)
end = time.monotonic() + secs
while time.monotonic() < end:
    for k in range(len(pairs)):
        swap(k)
for k in range(len(pairs)):
    if flips[k] % 2:
        swap(k)
print(sum(flips))
"""

# Run as UID: every kind of name the agent sees come and go, as fast as it
# can, for a bounded time.  Prints the operations made.
FLOODER = r"""
import os, sys, time
ldir, secs, target = sys.argv[1], float(sys.argv[2]), sys.argv[3]
ops, i = 0, 0
end = time.monotonic() + secs
while time.monotonic() < end:
    i += 1
    d = os.path.join(ldir, "fl%d" % (i % 50))
    os.mkdir(d)
    os.rmdir(d)
    l = os.path.join(ldir, "ln%d" % (i % 50))
    os.symlink(target, l)
    os.unlink(l)
    f = os.path.join(ldir, "pf%d" % (i % 50))
    open(f, "w").close()
    os.unlink(f)
    b = os.path.join(ldir, "bad name %d" % (i % 50))
    os.mkdir(b)
    os.rmdir(b)
    ops += 8
print(ops)
"""


def as_user(argv, **kw):
    return ["setpriv", "--reuid=%d" % UID, "--regid=%d" % UID,
            "--clear-groups"] + argv


def run_as_user(script, *args, timeout=120):
    out = subprocess.run(as_user([sys.executable, "-c", script] +
                                 [str(a) for a in args]),
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise Failure("as uid %d: %s" % (UID, out.stderr[-2000:]))
    return out.stdout


def snapshot(top):
    """Every entry under top: its type, owner, mode, size, mtime, content."""
    seen = {}
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            h = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            seen[os.path.relpath(p, top)] = (
                stat.S_IFMT(st.st_mode), st.st_uid, st.st_gid,
                stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, h)
    st = os.lstat(top)
    seen["."] = (st.st_uid, stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return seen


def setup(name):
    """A cluster with a root agent whose --legacy-dir the user may write
    (mode 1777, as /tmp); a root-owned directory beside it to aim at."""
    c = Cluster(name)
    c.start_coordinator()
    node = c.node("n1")
    for d in (c.dir, node.dir):
        os.chmod(d, 0o711)
    ldir = node.legacy_dir()
    os.chmod(ldir, 0o1777)
    target = os.path.join(node.dir, "target")
    os.mkdir(target)
    os.chmod(target, 0o755)
    with open(os.path.join(target, "keep"), "w") as f:
        f.write("root's own\n")
    return c, node, ldir, target


def served(c, job):
    code, st = c.http("GET", "/v1/jobs/%s" % job)
    return code == 200 and st.get("legacy") is not None


def written(path, start):
    try:
        with open(path) as f:
            return json.load(f).get("start_step") == start
    except (OSError, ValueError):
        return False


def agent_fds(node):
    return len(os.listdir("/proc/%d/fd" % node.agent.pid))


def agent_rss(node):
    with open("/proc/%d/status" % node.agent.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def shm_bytes(node):
    """Space the segments (dynprof.JOB) in the node's --shm-dir take."""
    n = 0
    for name in os.listdir(node.shm):
        if name.startswith("dynprof."):
            n += os.lstat(os.path.join(node.shm, name)).st_blocks * 512
    return n


def stats_line(node):
    m = re.findall(r"stats: .*", node.agent.output())
    check(m, "no stats line at the agent's exit")
    return m[-1]


def test_swap():
    c, node, ldir, target = setup("lghswap")
    with c:
        node.start_agent(["--legacy-dir", ldir])
        jobs = ["lgh%d-swap%d" % (PID, k) for k in range(4)]
        # The user's job directories, each with a link to the target beside.
        run_as_user(r"""
import os, sys
ldir, target = sys.argv[1], sys.argv[2]
for k, job in enumerate(sys.argv[3:]):
    d = os.path.join(ldir, job)
    os.mkdir(d, 0o755)
    with open(os.path.join(d, "dynprof.dialect"), "w") as f:
        f.write("mindspore-2.5\n")
    with open(os.path.join(d, "dynprof.output"), "w") as f:
        f.write(target + "\n")
    os.symlink(target, os.path.join(ldir, ".lnk%d" % k))
""", ldir, target, *jobs)
        for job in jobs:
            wait_for(lambda: served(c, job), 15, "%s served" % job)
        wids = {job: c.add_window(job, {"start_step": 10, "stop_step": 11})[
            "id"] for job in jobs}
        for job in jobs:
            wait_for(lambda: written(os.path.join(ldir, job,
                                                  "profiler_config.json"), 10),
                     15, "%s: first window written" % job)
        before = snapshot(target)
        pairs = []
        for k, job in enumerate(jobs):
            pairs += [os.path.join(ldir, job), os.path.join(ldir, ".lnk%d" % k)]
        swapper = subprocess.Popen(
            as_user([sys.executable, "-c", SWAPPER, "12"] + pairs),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if swapper.stdout.readline().strip() != "ready":
                raise Failure("swapper: %s" % swapper.stderr.read()[-2000:])
            # Windows posted all along: each a write the agent attempts.
            posted, start = 0, 20
            end = time.monotonic() + 12
            while time.monotonic() < end and swapper.poll() is None:
                for job in jobs:
                    c.http("DELETE", "/v1/jobs/%s/windows/%d" % (job, wids[job]))
                    code, body = c.http("POST", "/v1/jobs/%s/windows" % job,
                                        {"start_step": start,
                                         "stop_step": start + 1})
                    if code == 201:
                        wids[job] = body["id"]
                        posted += 1
                start += 10
                time.sleep(0.25)
            out, err = swapper.communicate(timeout=60)
        finally:
            if swapper.poll() is None:
                swapper.kill()
                swapper.wait()
        check(swapper.returncode == 0, "swapper: %s" % err[-2000:])
        swaps = int(out.strip())
        log("%d swaps while %d windows were posted" % (swaps, posted))
        check(swaps > 1000 and posted >= 20, "too little happened")
        after = snapshot(target)
        check(after == before, "the root-owned directory changed: %s" % sorted(
            set(after.items()) ^ set(before.items())))
        check(node.agent.alive(), "the agent died")
        check(shm_bytes(node) == 0, "segments made for legacy directories: "
              "%s" % os.listdir(node.shm))

        # Still served, and what it writes is the user's.
        for job in jobs:
            wait_for(lambda: served(c, job), 15, "%s served after" % job)
            c.http("DELETE", "/v1/jobs/%s/windows/%d" % (job, wids[job]))
            c.add_window(job, {"start_step": 5000, "stop_step": 5001})
        for job in jobs:
            path = os.path.join(ldir, job, "profiler_config.json")
            wait_for(lambda: written(path, 5000), 20,
                     "%s: a window written after the swaps" % job)
            st = os.lstat(path)
            check(stat.S_ISREG(st.st_mode) and st.st_uid == UID,
                  "%s: written as uid %d, not the user's" % (job, st.st_uid))
        check(snapshot(target) == before, "the target changed at the end")
        log("nothing outside the job directories changed; the agent serves on")


def test_budget():
    c, node, ldir, target = setup("lghbudget")
    with c:
        node.start_agent(["--legacy-dir", ldir])
        fds0, rss0 = agent_fds(node), agent_rss(node)
        n = 2000
        run_as_user(r"""
import os, sys
ldir, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(ldir, "lgb%05d" % i)
    os.mkdir(d, 0o755)
    if i % 2:
        with open(os.path.join(d, "dynprof.dialect"), "w") as f:
            f.write("mindspore-2.4\n")
""", ldir, n)
        names = ["lgb%05d" % i for i in range(n)]

        def count_served():
            return sum(1 for job in names if served(c, job))
        # The refusals are said (within the log's limit), then it settles.
        wait_for(lambda: "--legacy-per-uid" in node.agent.output(), 20,
                 "a refusal logged")
        time.sleep(2)
        k = wait_for(lambda: (lambda k: k if k == 64 else None)(
            count_served()), 90, "64 directories served (the default budget)")
        fds, shm, rss = agent_fds(node), shm_bytes(node), agent_rss(node)
        log("%d of %d directories served; agent fds %d (%d at start), "
            "RSS %.1f MiB (%.1f at start), --shm-dir %d bytes" % (
                k, n, fds, fds0, rss / 2**20, rss0 / 2**20, shm))
        check(rss - rss0 < 16 * 2**20, "the agent's RSS grew by %d bytes" % (
            rss - rss0))
        check(fds <= fds0 + 4, "the agent holds %d fds (%d at start)" % (
            fds, fds0))
        check(shm == 0, "legacy directories cost %d bytes of shm" % shm)

        # One of them goes: a refused one takes its place.
        gone = [job for job in names if served(c, job)][:5]
        run_as_user("import shutil, sys\nfor d in sys.argv[1:]: shutil.rmtree(d)",
                    *[os.path.join(ldir, job) for job in gone])
        for job in gone:
            wait_for(lambda: not served(c, job), 15, "%s dropped" % job)
        wait_for(lambda: count_served() == 64, 90,
                 "refused directories served once others went")

        # A real job: its ranks make and get their segment, and a window.
        rank = node.start_rank("lgbreal%d" % PID, 0, rate=50)
        c.wait_ranks("lgbreal%d" % PID, 1)
        seg = os.path.join(node.shm, "dynprof.lgbreal%d" % PID)
        check(os.path.exists(seg), "the real job has no segment")
        cur = wait_for(lambda: (lambda r: r and r[0]["step"])(
            c.status("lgbreal%d" % PID).get("ranks")), 10, "a step")
        wid = c.add_window("lgbreal%d" % PID, {"start_step": cur + 40,
                                               "stop_step": cur + 42})["id"]
        c.wait_window_done("lgbreal%d" % PID, wid, [0], timeout=60)
        check(rank.alive(), "the real rank died")
        shm = shm_bytes(node)
        log("the real job's rank got its segment and its window; --shm-dir "
            "now %d bytes (its segment alone)" % shm)
        check(shm <= os.lstat(seg).st_size + 4096, "shm %d bytes" % shm)
        check(node.agent.stop() == 0, "agent stop")
        st = stats_line(node)
        m = re.search(r"uid (\d+)\)", st)
        check(m and int(m.group(1)) >= n - 64, "refusals not counted: %s" % st)
        log("refusals counted: %s" % st[st.index("shm_refused"):])


def test_flood():
    c, node, ldir, target = setup("lghflood")
    with c:
        node.start_agent(["--legacy-dir", ldir])
        lines0 = node.agent.output().count("\n")
        secs = 15
        t0 = time.monotonic()
        ops = int(run_as_user(FLOODER, ldir, secs, target).strip())
        took = time.monotonic() - t0
        time.sleep(1)
        check(node.agent.alive(), "the agent died")
        lines = node.agent.output().count("\n") - lines0
        # log.h: at most LOG_LIMIT_GLOBAL (100) limited lines per 10 s.
        bound = 100 * (int(took / 10) + 2)
        log("%d operations in %.1f s: %d agent log lines (bound %d)" % (
            ops, took, lines, bound))
        check(ops >= 10000, "the flood was too small: %d" % ops)
        check(lines <= bound, "%d lines in the agent's log" % lines)
        job = "lghok%d" % PID
        os.mkdir(os.path.join(ldir, job))
        with open(os.path.join(ldir, job, "dynprof.dialect"), "w") as f:
            f.write("mindspore-2.6\n")
        wait_for(lambda: served(c, job), 20, "a job served after the flood")
        c.add_window(job, {"start_step": 3, "stop_step": 4})
        wait_for(lambda: written(os.path.join(ldir, job,
                                              "profiler_config.json"), 3),
                 20, "its window written")
        check(node.agent.stop() == 0, "agent stop")
        st = stats_line(node)
        log("after the flood: %s" % st[st.index("shm_refused"):])


SCENARIOS = {"swap": test_swap, "budget": test_budget, "flood": test_flood}


def entry():
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.stderr.write(__doc__)
        return 2
    if os.geteuid() != 0:
        print("SKIP: needs root (a root agent, a second uid)")
        return SKIP
    return main(SCENARIOS[sys.argv[1]])


if __name__ == "__main__":
    sys.exit(entry())
