#!/usr/bin/python3
"""Another local user can neither deny a job dynprof nor speak as its ranks
(docs/segments.md): two real uids, a real coordinator, a root agent and real
ranks, the segment directory sticky and world-writable as /dev/shm is.

The squatter (its own uid) first takes every name it can: the old flat segment
name of the job, dynprof.victim (0644, the attack that used to deny the
victim's ranks dynprof), the victim's directory name dynprof-u<victim> (its
own directory, 0777, with its own segment of the job inside), and runs a rank
of the job as rank 0 itself.  Then the victim's rank 0 starts: its library
asks the agent for its directory, the agent (learning the uid from the
kernel) moves the squatter's aside and makes it again for the victim, the rank
attaches, reports, and runs a window posted to the coordinator.  Every status
read meanwhile shows rank 0 with the uid of the process that reported it: the
victim's pid with the victim's uid, the squatter's with the squatter's, never
the squatter's as the victim's.  Skipped (77) when not root or without
setpriv/useradd.
"""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
from cluster import (AGENT, SKIP, Cluster, Failure, binary, check,  # noqa: E402
                     local_user, log, main, wait_for)

JOB = "victim"
VICTIM_STEP = 100000	# the victim's first step
USERS = ("dpvictim", "dpsquat", "dpagent")


def as_user(uid, gid, groups=None, env=()):
    """A command prefix running as uid:gid, with the supplementary groups
    given (none by default), and env (NAME=VALUE strings) set."""
    pre = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid]
    pre += ["--groups=%s" % ",".join(str(g) for g in groups)] if groups \
        else ["--clear-groups"]
    if env:
        pre += ["env"] + list(env)
    return tuple(pre)


def squat(shm, victim, squatter, sq_gid):
    """What the squatter can take before the victim comes, as the squatter."""
    script = (
        "import os\n"
        "shm, v = %r, %d\n"
        "fd = os.open(os.path.join(shm, 'dynprof.%s'), os.O_CREAT | "
        "os.O_WRONLY, 0o644); os.write(fd, b'x' * 4096); os.close(fd)\n"
        "d = os.path.join(shm, 'dynprof-u%%d' %% v)\n"
        "os.mkdir(d); os.chmod(d, 0o777)\n"
        "fd = os.open(os.path.join(d, 'dynprof.%s'), os.O_CREAT | "
        "os.O_WRONLY, 0o666); os.write(fd, b'x' * 4096); os.close(fd)\n"
        % (shm, victim, JOB, JOB))
    subprocess.run(list(as_user(squatter, sq_gid)) + [sys.executable, "-c",
                   script], check=True)
    st = os.lstat(os.path.join(shm, "dynprof-u%d" % victim))
    check(st.st_uid == squatter, "the squatter's directory is its own")


def rank0(c):
    code, page = c.http("GET", "/v1/jobs/%s/ranks?limit=100" % JOB)
    if code != 200:
        return None
    for r in page["ranks"]:
        if r["rank"] == 0:
            return r
    return None


def test():
    rc = root_agent()
    if rc != 0:
        return rc
    rc = unprivileged_agent()
    if rc != 0:
        return rc
    return lock_squat()


def root_agent():
    if os.geteuid() != 0 or shutil.which("setpriv") is None or \
            shutil.which("useradd") is None:
        print("skipped: needs root, setpriv and useradd")
        return SKIP
    victim, squatter = local_user(USERS[0]), local_user(USERS[1])
    v_gid = pwd.getpwuid(victim).pw_gid
    s_gid = pwd.getpwuid(squatter).pw_gid
    with Cluster("squat") as c:
        os.chmod(c.dir, 0o711)
        c.start_coordinator()
        n = c.node("n1")
        os.chmod(n.dir, 0o711)
        os.chmod(n.shm, 0o1777)		# as /dev/shm, or a k8s hostPath
        outs = {}
        for uid, gid in ((victim, v_gid), (squatter, s_gid)):
            outs[uid] = os.path.join(n.dir, "out-%d" % uid)
            os.mkdir(outs[uid], 0o700)
            os.chown(outs[uid], uid, gid)
        # The socket open to every uid, as the DaemonSet has it.
        n.start_agent(extra=("--shm-mode", "0666"))

        squat(n.shm, victim, squatter, s_gid)
        n.out = outs[squatter]
        sq = n.start_rank(JOB, 0, rate=50, python=True,
                          wrap=as_user(squatter, s_gid))
        seen = set()	# (pid, uid) rank 0 was shown with

        def squatter_seen():
            x = rank0(c) or {}
            seen.add((x.get("pid"), x.get("uid")))
            return x.get("pid") == sq.pid
        wait_for(squatter_seen, 30, "the squatter's rank 0")

        # The victim's job resumed from a checkpoint: far ahead of the
        # squatter's steps, so that its window is the victim's alone to run
        # (the coordinator knows one rank 0, which ends a window for both).
        n.out = outs[victim]
        vr = n.start_rank(JOB, 0, rate=50, first_step=VICTIM_STEP,
                          wrap=as_user(victim, v_gid))
        # Both rank 0: keep both where check_ranks_running() looks.
        n.ranks = {"squatter": sq, "victim": vr}

        # First: the victim's rank is not denied dynprof.
        def victim_seen():
            c.check_ranks_running()
            return (rank0(c) or {}).get("pid") == vr.pid
        wait_for(victim_seen, 30, "the victim's rank 0 reporting")
        log("victim's rank 0 reports (pid %d)" % vr.pid)

        # Every read: rank 0 shows the uid of whichever process reported.
        vstep = [VICTIM_STEP]	# the victim's last step shown

        def consistent():
            c.check_ranks_running()
            x = rank0(c)
            if x is None or x.get("uid") is None:
                return None
            want = {sq.pid: squatter, vr.pid: victim}.get(x["pid"])
            check(want is None or x["uid"] == want,
                  "rank 0 of pid %d shown as uid %d: the squatter speaks "
                  "as the victim" % (x["pid"], x["uid"]))
            od = x.get("output_dir") or ""
            check(od == "" or od.startswith(outs[x["uid"]] + "/"),
                  "rank 0 shown as uid %d with output_dir %s" % (x["uid"],
                                                                 od))
            seen.add((x["pid"], x["uid"]))
            if x["pid"] == vr.pid:
                vstep[0] = max(vstep[0], x.get("step") or 0)
            return (vr.pid, victim) in seen
        wait_for(consistent, 30, "the victim's rank 0 shown with its uid",
                 interval=0.05)
        log("victim's rank 0: pid %d uid %d" % (vr.pid, victim))

        # Its directory is its own again, the squatter's moved aside.
        st = os.lstat(os.path.join(n.shm, "dynprof-u%d" % victim))
        check(stat.S_ISDIR(st.st_mode) and st.st_uid == victim and
              st.st_mode & 0o022 == 0, "the victim's directory is its own "
              "(uid %d mode %o)" % (st.st_uid, st.st_mode))
        aside = [e for e in os.listdir(n.shm) if
                 e.startswith(".dynprof-u%d.%d." % (victim, squatter))]
        check(len(aside) == 1, "the squatter's directory moved aside: %s" %
              os.listdir(n.shm))
        check("was held by uid %d" % squatter in n.agent.output(),
              "the agent says whose the name was")

        # The victim's rank gets its window from the coordinator.
        start = vstep[0] + 100
        w = c.add_window(JOB, {"start_step": start, "stop_step": start + 4,
                               "ranks": "0"})
        path = os.path.join(outs[victim], "rank0_start%d_stop%d" %
                            (start, start + 4), "trace.json")

        def traced():
            consistent()
            try:
                with open(path) as f:
                    return json.load(f)
            except (OSError, ValueError):
                return None
        t = wait_for(traced, 60, "the victim's trace of window %d" % w["id"],
                     interval=0.1)
        check(t["pid"] == vr.pid and t["steps"] == list(range(start,
              start + 5)), "the trace is the victim's rank's: %s" % t)
        log("victim's trace: %s" % path)
        # A few more reads while both run: never the squatter as the victim.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            consistent()
            time.sleep(0.05)
        check((sq.pid, squatter) in seen, "the squatter's rank shown as "
              "its own uid")
        out = c.ctl("status", JOB).stdout
        head = [ln for ln in out.splitlines() if ln.startswith("RANK ")]
        row = [ln.split() for ln in out.splitlines() if ln.startswith("0 ")]
        check(head and head[0].split()[:3] == ["RANK", "NODE", "UID"] and
              row and row[0][2] in (str(victim), str(squatter)),
              "dynprofctl status shows rank 0's uid:\n%s" % out)

        # The squatter's rank goes: the job stays subscribed for the
        # victim's segment (one subscription for every user's segment of
        # the job), and its next window reaches the victim's rank.
        sq.stop()
        wait_for(lambda: "no rank of uid %d left" % squatter in
                 n.agent.output(), 30, "the squatter's segment left empty")
        start = vstep[0] + 100
        w = c.add_window(JOB, {"start_step": start, "stop_step": start + 4,
                               "ranks": "0"})
        path = os.path.join(outs[victim], "rank0_start%d_stop%d" %
                            (start, start + 4), "trace.json")
        n.ranks = {"victim": vr}
        t = wait_for(traced, 60, "the victim's trace of window %d after the "
                     "squatter left" % w["id"], interval=0.1)
        check(t["pid"] == vr.pid, "the trace is the victim's rank's")
        log("after the squatter left, the victim's trace: %s" % path)
    return 0


def debian_node(c, agent, a_gid):
    """Cluster c's coordinator and node n1 laid out as the Debian package
    lays a node out: the segment directory 3770, the agent user's."""
    os.chmod(c.dir, 0o711)
    c.start_coordinator()
    n = c.node("n1")
    os.chown(n.dir, agent, a_gid)
    os.chmod(n.dir, 0o711)
    os.chown(n.shm, agent, a_gid)
    os.chmod(n.shm, 0o3770)
    return n


def unprivileged_agent():
    """The Debian package's setup: the agent as its own user, the segment
    directory 3770 its own, every training user (the squatter too) in its
    group, segments 0660.  A name one member took from another is moved aside
    by the agent (it owns the directory) and the victim makes its own."""
    victim, squatter, agent = (local_user(u) for u in USERS)
    v_gid = pwd.getpwuid(victim).pw_gid
    s_gid = pwd.getpwuid(squatter).pw_gid
    a_gid = pwd.getpwuid(agent).pw_gid
    env = ("DYNPROF_SHM_MODE=0660",)
    with Cluster("squat-unpriv") as c:
        n = debian_node(c, agent, a_gid)
        outs = {}
        for uid, gid in ((victim, v_gid), (squatter, s_gid)):
            outs[uid] = os.path.join(n.dir, "out-%d" % uid)
            os.mkdir(outs[uid], 0o700)
            os.chown(outs[uid], uid, gid)
        n.start_agent(extra=("--shm-mode", "0660"),
                      wrap=as_user(agent, a_gid, [a_gid]))

        script = "import os; os.mkdir(%r, 0o755)" % os.path.join(
            n.shm, "dynprof-u%d" % victim)
        subprocess.run(list(as_user(squatter, s_gid, [a_gid])) +
                       [sys.executable, "-c", script], check=True)
        n.out = outs[squatter]
        sq = n.start_rank(JOB, 0, rate=50, python=True,
                          wrap=as_user(squatter, s_gid, [a_gid], env))
        wait_for(lambda: (rank0(c) or {}).get("pid") == sq.pid, 30,
                 "the squatter's rank 0")
        n.out = outs[victim]
        vr = n.start_rank(JOB, 0, rate=50, first_step=VICTIM_STEP,
                          wrap=as_user(victim, v_gid, [a_gid], env))
        n.ranks = {"squatter": sq, "victim": vr}

        vstep = [VICTIM_STEP]	# the victim's last step shown

        def shown(pid, uid):
            c.check_ranks_running()
            x = rank0(c) or {}
            if x.get("pid") == vr.pid:
                vstep[0] = max(vstep[0], x.get("step") or 0)
            check(x.get("pid") not in (sq.pid, vr.pid) or x.get("uid") ==
                  {sq.pid: squatter, vr.pid: victim}[x["pid"]],
                  "rank 0 of pid %s shown as uid %s" % (x.get("pid"),
                                                       x.get("uid")))
            return x.get("pid") == pid and x.get("uid") == uid
        wait_for(lambda: shown(vr.pid, victim), 30,
                 "the victim's rank 0 shown with its uid")
        st = os.lstat(os.path.join(n.shm, "dynprof-u%d" % victim))
        check(st.st_uid == victim and st.st_mode & 0o7777 == 0o2750,
              "the victim's directory: uid %d mode %o" % (st.st_uid,
                                                          st.st_mode))
        check("was held by uid %d" % squatter in n.agent.output(),
              "the agent says whose the name was")

        start = vstep[0] + 100
        c.add_window(JOB, {"start_step": start, "stop_step": start + 4,
                           "ranks": "0"})
        path = os.path.join(outs[victim], "rank0_start%d_stop%d" %
                            (start, start + 4), "trace.json")

        def traced():
            shown(0, 0)
            try:
                with open(path) as f:
                    return json.load(f)
            except (OSError, ValueError):
                return None
        t = wait_for(traced, 60, "the victim's trace", interval=0.1)
        check(t["pid"] == vr.pid, "the trace is the victim's rank's")
        log("unprivileged agent: the victim's rank ran its window")
    return 0



HOLD = ("import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print(1, flush=True)\n"
        "time.sleep(120)\n")


def lock_squat():
    """The Debian setup again (the segment directory 3770 the agent's, the
    squatter in its group), the agent not yet started: the squatter makes
    the agent's lock file its own and holds a lock on it.  The agent starts
    all the same, says whose the file was, and holds the lock of a file of
    its own: a second agent on the directory is refused."""
    victim, squatter, agent = (local_user(u) for u in USERS)
    s_gid = pwd.getpwuid(squatter).pw_gid
    a_gid = pwd.getpwuid(agent).pw_gid
    with Cluster("squat-lock") as c:
        n = debian_node(c, agent, a_gid)
        lock = os.path.join(n.shm, "dynprof-agent.lock")
        holder = subprocess.Popen(list(as_user(squatter, s_gid, [a_gid])) +
                                  [sys.executable, "-c", HOLD, lock],
                                  stdout=subprocess.PIPE)
        c.cleanups.append(holder.kill)
        check(holder.stdout.readline().strip() == b"1",
              "the squatter's lock not taken")
        check(os.lstat(lock).st_uid == squatter, "the lock file is the "
              "squatter's")
        n.start_agent(extra=("--shm-mode", "0660"),
                      wrap=as_user(agent, a_gid, [a_gid]))
        check("is not this user's lock file (a file, uid %d" % squatter in
              n.agent.output(), "the agent does not say whose the lock "
              "file was")
        check(os.lstat(lock).st_uid == agent, "the lock file is not the "
              "agent's now")
        second = subprocess.run(
            list(as_user(agent, a_gid, [a_gid])) + [
                binary(AGENT), "--coordinator", "127.0.0.1:%d" %
                c.agent_port, "--node", "n2", "--socket",
                os.path.join(n.dir, "second.sock"), "--shm-dir", n.shm],
            capture_output=True, text=True, timeout=30)
        check(second.returncode != 0 and "is in use by pid %d" %
              n.agent.pid in second.stderr, "a second agent on the "
              "directory: rc %d %s" % (second.returncode, second.stderr))
        log("a lock file the squatter held replaced; a second agent "
            "refused")
    return 0

if __name__ == "__main__":
    main(test)
