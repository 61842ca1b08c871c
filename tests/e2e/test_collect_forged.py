#!/usr/bin/python3
"""A rank cannot make the root agent collect windows nobody scheduled, nor
what a queue file of its own names.

A rank's slot is its own memory: a local user (its own uid, through
setpriv) rewrites its slot's window and last event as "stopped" in windows
1001-1006, which no coordinator made, with a trace directory of 4 MiB of
random bytes.  Believed, each would be packed again into the shared trace
store (up to 8 GiB each, thousands of them: one user fills the store every
job shares).  The root agent collects the window the coordinator scheduled,
once, and none of the forged ones.

Then the rank names, as its output directory for a window the coordinator did
schedule, /proc/PID/root/... of a process of its own uid in another mount
namespace (another container's files), made undumpable: the user itself
cannot read there (the kernel's ptrace check), but a root packer acting as the
user kept its CAP_SYS_PTRACE and read the other namespace's file into the
shared store.  No procfs magic link is followed: the collection fails, and
nothing of that file is in the store."""

import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, local_user, log, main,  # noqa: E402
                     wait_for)

JOB = "forged-%d" % os.getpid()
USER = "dpforger"
SETTLE = 1
FORGED = list(range(1001, 1007))
SKIP = 77

# struct seg_slot (common/segment.h), SEG_VERSION 9.
HDR_SLOTS_OFFSET = 32
SLOT_PID, SLOT_RANK, SLOT_WINDOW, SLOT_LAST_EVENT = 0, 16, 24, 28
SLOT_OUTPUT_DIR, SEG_PATH_MAX = 88, 1024
EVENT_STOPPED = 3

FORGER = r"""
import mmap, os, struct, sys, time
path, windows, settle = sys.argv[1], sys.argv[2:], float(os.environ["SETTLE"])
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size)
off, size, n = struct.unpack_from("<III", m, %d)
slot = None
for i in range(n):
    s = off + i * size
    pid, = struct.unpack_from("<i", m, s + %d)
    rank, = struct.unpack_from("<i", m, s + %d)
    if pid != 0 and rank == 0:
        slot = s
if slot is None:
    sys.exit("no slot of rank 0")
if os.environ.get("OUTPUT_DIR"):
    d = os.environ["OUTPUT_DIR"].encode()
    m[slot + %d:slot + %d + len(d) + 1] = d + b"\0"
for w in windows:
    struct.pack_into("<II", m, slot + %d, int(w), %d)
    print("forged window", w, flush=True)
    time.sleep(settle + 1.5)
""" % (HDR_SLOTS_OFFSET, SLOT_PID, SLOT_RANK, SLOT_OUTPUT_DIR, SLOT_OUTPUT_DIR,
       SLOT_WINDOW, EVENT_STOPPED)


UNDUMPABLE_SLEEP = ("import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
                    "print(1, flush=True); time.sleep(300)")


def test():
    if os.geteuid() != 0 or shutil.which("setpriv") is None or \
            shutil.which("useradd") is None:
        print("skipped: needs root, setpriv and useradd")
        return SKIP
    uid = local_user(USER)
    gid = pwd.getpwuid(uid).pw_gid
    as_user = ("setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
               "--clear-groups")
    with Cluster("forged") as c:
        os.chmod(c.dir, 0o711)
        c.start_coordinator()
        n = c.node("n0")
        os.chmod(n.dir, 0o711)
        os.chmod(n.shm, 0o1777)
        out = os.path.join(n.dir, "out-%d" % uid)
        os.mkdir(out, 0o700)
        os.chown(out, uid, gid)
        n.out = out
        store = c.trace_store()
        flags = ("--shm-mode", "0666", "--trace-store", store,
                 "--trace-settle", str(SETTLE))
        n.start_agent(extra=flags)
        n.start_rank(JOB, 0, rate=50, wrap=as_user)
        c.wait_ranks(JOB, 1, min_step=5)
        w = c.add_window(JOB, {"in_steps": 10, "steps": 10})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        c.wait_window_done(JOB, wid, [0], timeout=60)
        jdir = os.path.join(store, JOB)
        honest = os.path.join(jdir, "window-%d" % wid, "rank-0.tar.zst")
        wait_for(lambda: os.path.exists(honest), 60,
                 "the scheduled window's trace collected")
        log("window %d collected: %d bytes" % (wid, os.path.getsize(honest)))

        # The forger's trace: 4 MiB that zstd cannot shrink, its own.
        tdir = os.path.join(out, "rank0_start%d_stop%d" % (a, b))
        big = os.path.join(tdir, "big.bin")
        with open(big, "wb") as f:
            f.write(os.urandom(4 << 20))
        os.chown(big, uid, gid)
        os.utime(tdir, (time.time() - 60, time.time() - 60))
        seg = os.path.join(n.shm, "dynprof-u%d" % uid, "dynprof." + JOB)
        check(os.path.exists(seg), "no segment at %s" % seg)
        env = dict(os.environ, SETTLE=str(SETTLE))
        p = subprocess.run(list(as_user) + [sys.executable, "-c", FORGER, seg] +
                           [str(x) for x in FORGED], env=env,
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "the forger: %s %s" % (p.stdout, p.stderr))
        log("forged windows %s in rank 0's slot" % FORGED)
        # Long enough for the settle time, a packing each and a retry.
        time.sleep(3 * SETTLE + 8)
        c.check_ranks_running()
        got = sorted(os.listdir(jdir))
        forged = [d for d in got if d != "window-%d" % wid]
        size = sum(os.path.getsize(os.path.join(jdir, d, f))
                   for d in forged for f in os.listdir(os.path.join(jdir, d)))
        check(not forged, "the agent collected windows nobody scheduled: "
              "%s, %d bytes" % (forged, size))
        check(os.listdir(os.path.join(jdir, "window-%d" % wid)) ==
              ["rank-0.tar.zst"], "window %d holds %s" % (
                  wid, os.listdir(os.path.join(jdir, "window-%d" % wid))))
        log("no forged window collected; the store holds %s" % got)

        # Another mount namespace: a tmpfs on c.dir/hidden that only it
        # sees, holding a directory of the user's, and a process of the
        # user's in it, undumpable (as a process that holds secrets makes
        # itself: prctl(PR_SET_DUMPABLE, 0)).
        hidden = os.path.join(c.dir, "hidden")
        os.mkdir(hidden)
        sleeper = subprocess.Popen([
            "unshare", "-m", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs hidden %s && mkdir %s/t && "
            "echo SECRET-OTHER-NS > %s/t/secret && chown -R %d:%d %s/t && "
            "exec setpriv --reuid=%d --regid=%d --clear-groups %s -c '%s'" % (
                hidden, hidden, hidden, uid, gid, hidden, uid, gid,
                sys.executable, UNDUMPABLE_SLEEP)], stdout=subprocess.PIPE)
        c.cleanups.append(sleeper.kill)
        check(sleeper.stdout.readline().strip() == b"1",
              "the other namespace's process did not start")
        there = "/proc/%d/root%s/t" % (sleeper.pid, hidden)
        wait_for(lambda: os.path.exists(os.path.join(there, "secret")) and
                 os.stat(os.path.join(there, "secret")).st_uid == uid, 20,
                 "the other namespace's file")
        os.utime(os.path.join(there, "secret"), (time.time() - 60,
                                                 time.time() - 60))
        os.utime(there, (time.time() - 60, time.time() - 60))
        q = subprocess.run(list(as_user) + ["cat", os.path.join(there,
                                                                "secret")],
                           capture_output=True, text=True)
        check(q.returncode != 0, "the user reads the other namespace's file "
              "itself: the test proves nothing")
        # A window scheduled far ahead: the agent gave it to the segment.
        w2 = c.add_window(JOB, {"in_steps": 1000000, "steps": 10})
        wait_for(lambda: "applied generation" in n.agent.output() and
                 "%d windows" % 1 in n.agent.output().split(
                     "applied generation")[-1], 20, "window %d applied" %
                 w2["id"])
        env["OUTPUT_DIR"] = there
        p = subprocess.run(list(as_user) + [sys.executable, "-c", FORGER, seg,
                                            str(w2["id"])], env=env,
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "the forger: %s %s" % (p.stdout, p.stderr))
        pat = "job %s window %d rank 0" % (JOB, w2["id"])

        def outcome():
            text = n.agent.output()
            return ("collected " + pat in text or
                    "collect failed: " + pat in text) or None
        wait_for(outcome, 60, "window %d's collection tried" % w2["id"])
        arch = os.path.join(jdir, "window-%d" % w2["id"], "rank-0.tar.zst")
        if os.path.exists(arch):
            raw = subprocess.run(["zstd", "-dc", arch], capture_output=True
                                 ).stdout
            check(b"SECRET-OTHER-NS" not in raw, "the root agent packed "
                  "another namespace's file through %s into the store" %
                  there)
        check("collected " + pat not in n.agent.output(),
              "a trace collected through %s" % there)
        log("%s not followed: %s" % (there, [l for l in n.agent.output(
            ).splitlines() if pat in l][-1:]))
        squatted_queue(c, n, store, as_user, flags)
    return 0


def squatted_queue(c, n, store, as_user, flags):
    """The agent's queue file names, on each line, a directory to pack and
    the uid to read it as.  It lives in --shm-dir, which the ranks' users
    may write: with no queue file there (a fresh boot's /dev/shm), the user
    puts one of its own naming root's directory as uid 0.  The restarted
    agent ignores it, says so, and packs nothing of root's."""
    secret = os.path.join(c.dir, "rootsecret")
    os.mkdir(secret, 0o700)
    with open(os.path.join(secret, "trace.json"), "w") as f:
        f.write("SECRET-ROOT\n")
    os.utime(secret, (time.time() - 60, time.time() - 60))
    n.agent.stop()
    queue = os.path.join(n.shm, "dynprof-agent.collect")
    if os.path.exists(queue):
        os.unlink(queue)
    p = subprocess.run(list(as_user) + [
        "sh", "-c", "printf 'dynprof-collect 5\\n%s 77 0 0 %s\\n' > %s" % (
            JOB, secret, queue)], capture_output=True, text=True)
    check(p.returncode == 0 and os.stat(queue).st_uid != 0,
          "the user's queue file: %s %s" % (p.stdout, p.stderr))
    n.start_agent(extra=flags)
    wait_for(lambda: "not this agent's queue file" in n.agent.output() or
             "window 77" in n.agent.output() or None, 20,
             "the agent reading the queue file")
    time.sleep(3 * SETTLE + 4)
    w77 = os.path.join(store, JOB, "window-77")
    if os.path.exists(w77):
        check(False, "the root agent packed what a user's queue file "
              "named: %s" % os.listdir(w77))
    check("job %s window 77" % JOB not in n.agent.output(),
          "the agent took the user's line: %s" % [
              l for l in n.agent.output().splitlines() if "window 77" in l])
    check("not this agent's queue file" in n.agent.output(),
          "the agent did not say the queue file was not its own")
    log("a queue file of the user's ignored: %s" % [
        l for l in n.agent.output().splitlines() if "queue file" in l][-1:])


if __name__ == "__main__":
    main(test)
