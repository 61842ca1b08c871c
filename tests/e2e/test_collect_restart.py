#!/usr/bin/python3
"""An agent SIGKILLed at the exact points of a rank's collection where its
archive is whole but not yet reported (--test-stop-at stops it there, the
test kills it): each rank is reported `collected` once with its size, sha256
and TraceSummary, and nothing is packed twice.

- window 1 (the agent's --trace-store), killed after the archive's rename
  and before its report: the summary, noted in the queue file before the
  rename, still reaches the coordinator;
- window 2 (the job's own directory store), killed at the same point: the
  archive found in the own store is reported, not packed again;
- window 3 (own store), killed once the archive is written whole under its
  temporary name, before the rename: put in place, not packed again;
- a window one rank ended and another has not yet: after a clean restart
  the first rank's slot, still `stopped`, is not packed again into the
  own store.

No temporary archive is left in a store nor in the agent's state, the queue
file empties, and `dynprofctl fetch` brings each archive with its sha256
checked, which tar unpacks."""

import hashlib
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import Cluster, check, log, main, wait_for  # noqa: E402

JOB = "crst-%d" % os.getpid()
OTHER = "crso-%d" % os.getpid()
LATE = "crsl-%d" % os.getpid()
RANKS = [0, 1]


def sha_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test():
    with Cluster("collrestart") as c:
        allow = os.path.join(c.dir, "allowed")
        os.makedirs(allow)
        own = os.path.join(allow, "own")
        n, store, flags = c.start_collecting(1, ["--trace-store-allow",
                                                 allow])
        for job in (JOB, OTHER):
            for r in RANKS:
                n.start_rank(job, r, rate=50)
            c.wait_ranks(job, len(RANKS), min_step=5)
        code, body = c.http("PUT", "/v1/jobs/%s/trace-store" % JOB,
                            {"store": own})
        check(code == 200, "trace-store: %s %s" % (code, body))
        queue = os.path.join(n.shm, "dynprof-agent.collect")
        logged = {"pos": 0}

        def restart(point):
            n.agent.stop()
            logged["pos"] = len(n.agent.output())
            n.start_agent(extra=flags + (["--test-stop-at", point]
                                         if point else []))

        def stopped_at(point, job):
            """Waits for the agent to stop itself at point; returns the
            rank it stopped on."""
            def cond():
                m = re.search(r"test-stop-at %s: job %s window \d+ rank "
                              r"(\d+): stopped" % (point, job),
                              n.agent.output()[logged["pos"]:])
                if m is None:
                    return None
                with open("/proc/%d/stat" % n.agent.pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                return [int(m.group(1))] if state == "T" else None
            return wait_for(cond, 90, "the agent stopped at %s" % point,
                            interval=0.05)[0]

        def window(job):
            return c.add_window_when_ready(job, {"in_steps": 20,
                                                 "steps": 10})["id"]

        def collected(job, wid):
            idx = c.wait_traces_indexed(job, wid, len(RANKS), 90,
                                        "%s window %d collected" % (job, wid))
            return {t["rank"]: t for t in idx["traces"]}

        def compared(job, wid):
            def cond():
                code, body = c.http("GET", "/v1/jobs/%s/windows/%d/compare" %
                                    (job, wid))
                check(code == 200, "compare: %s %s" % (code, body))
                return body if body["counts"]["collected"] == len(RANKS) \
                    else None
            body = wait_for(cond, 30, "%s window %d compared" % (job, wid))
            got = {x["rank"]: x for x in body["ranks"]}
            for r in RANKS:
                check(r in got and got[r]["steps_read"] > 0,
                      "%s window %d rank %d: no summary: %s" % (
                          job, wid, r, body))
            check(body["counts"]["compared"] == len(RANKS),
                  "compared: %s" % body["counts"])

        def packings(job, wid, rank):
            """How many times the agent packed rank and found it packed."""
            out = n.agent.output()
            pk = len(re.findall(r"collected job %s window %d rank %d: " %
                                (job, wid, rank), out))
            found = len(re.findall(r"collect: job %s window %d rank %d: "
                                   r"packed by the last agent" %
                                   (job, wid, rank), out))
            return pk, found

        def check_window(job, wid, wdir, killed, at_rank, inode, sha):
            idx = collected(job, wid)
            for r in RANKS:
                path = os.path.join(wdir, "rank-%d.tar.zst" % r)
                t = idx[r]
                check(t["state"] == "collected" and t["location"] == path and
                      t["size"] == os.path.getsize(path) and
                      t["sha256"] == sha_of(path),
                      "%s window %d rank %d: index %s, store %d bytes %s" % (
                          job, wid, r, t, os.path.getsize(path),
                          sha_of(path)))
                pk, found = packings(job, wid, r)
                want = (0, 1) if r == at_rank else (1, 0)
                check((pk, found) == want, "%s window %d rank %d: packed %d "
                      "times, found packed %d times (want %s)" % (
                          job, wid, r, pk, found, want))
            path = os.path.join(wdir, "rank-%d.tar.zst" % at_rank)
            check(os.stat(path).st_ino == inode and sha_of(path) == sha and
                  idx[at_rank]["sha256"] == sha,
                  "%s rank %d: not the archive packed before the kill at "
                  "%s" % (job, at_rank, killed))
            st = c.status(job)
            for r in st["ranks"]:
                ev = [e for e in r.get("events", []) if e.get("window") == wid
                      and e.get("kind") in ("collected", "collect_failed")]
                check(len(ev) == 1, "%s rank %d: %s" % (job, r["rank"], ev))
            compared(job, wid)
            check(sorted(os.listdir(wdir)) ==
                  ["rank-%d.tar.zst" % r for r in RANKS],
                  "%s: %s left" % (wdir, os.listdir(wdir)))

        def queue_empty():
            lines = open(queue).read().splitlines()[1:]
            return lines if all(x.startswith(("-", "=")) for x in lines) \
                else None

        def killed_at(point, job, wdir, tmp):
            r = stopped_at(point, job)
            name = ".rank-%d.tar.zst.part" % r if tmp else "rank-%d.tar.zst" % r
            path = os.path.join(wdir, name)
            check(os.path.isfile(path), "%s: no %s (%s)" % (
                point, name, os.listdir(wdir)))
            lines = open(queue).read().splitlines()
            noted = [x for x in lines if x.startswith(("~ ", "> ")) and
                     x.split()[1:4] == [job, str(wid), str(r)]]
            check(len(noted) == 2 and not [x for x in lines if x.startswith(
                "+ ") and x.split()[1:4] == [job, str(wid), str(r)]],
                "%s: the queue file: %s" % (point, lines))
            inode, sha = os.stat(path).st_ino, sha_of(path)
            n.agent.kill9()
            log("agent SIGKILLed at %s on %s window %d rank %d" % (
                point, job, wid, r))
            logged["pos"] = len(n.agent.output())
            n.start_agent(extra=flags)
            return r, inode, sha

        # 1: the agent's store, killed between the rename and the report.
        restart("collect-renamed")
        wid = window(OTHER)
        wdir = os.path.join(store, OTHER, "window-%d" % wid)
        r, inode, sha = killed_at("collect-renamed", OTHER, wdir, False)
        check_window(OTHER, wid, wdir, "collect-renamed", r, inode, sha)

        # 2: the job's own store, the same point.
        restart("collect-renamed")
        wid = window(JOB)
        wdir = os.path.join(own, JOB, "window-%d" % wid)
        r, inode, sha = killed_at("collect-renamed", JOB, wdir, False)
        check_window(JOB, wid, wdir, "collect-renamed", r, inode, sha)

        # 3: the own store, killed before the rename.
        restart("collect-packed")
        wid = window(JOB)
        wdir = os.path.join(own, JOB, "window-%d" % wid)
        r, inode, sha = killed_at("collect-packed", JOB, wdir, True)
        check_window(JOB, wid, wdir, "collect-packed", r, inode, sha)
        wait_for(queue_empty, 30, "the queue file emptied")

        # 4: a window one rank of LATE ended and the other, slow, has not:
        # its slot says stopped still after a clean restart, and the
        # window is in the segment's schedule: its archive in the own
        # store is not packed again.
        for r, rate in ((0, 50), (1, 1)):
            n.start_rank(LATE, r, rate=rate)
        c.wait_ranks(LATE, 2)
        code, body = c.http("PUT", "/v1/jobs/%s/trace-store" % LATE,
                            {"store": own})
        check(code == 200, "trace-store: %s %s" % (code, body))
        lwid = window(LATE)
        c.wait_window_done(LATE, lwid, [0], timeout=60)
        ldir = os.path.join(own, LATE, "window-%d" % lwid)
        wait_for(lambda: packings(LATE, lwid, 0)[0] == 1, 30,
                 "%s rank 0 collected" % LATE)
        inode = os.stat(os.path.join(ldir, "rank-0.tar.zst")).st_ino
        restart(None)
        # Past the settle time, and a packing's few ms.
        time.sleep(4)
        check(packings(LATE, lwid, 0)[0] == 1 and
              os.stat(os.path.join(ldir, "rank-0.tar.zst")).st_ino == inode,
              "%s rank 0 packed again after a restart: %s" % (
                  LATE, n.agent.output()[logged["pos"]:][-1500:]))
        check(os.listdir(ldir) == ["rank-0.tar.zst"], "%s" % os.listdir(ldir))
        check("dynprof-agent.collect.tmp" not in os.listdir(n.shm),
              "a temporary queue file left: %s" % os.listdir(n.shm))

        # What a user fetches: each archive, its sha256 checked, and
        # unpacked beside it.
        dl = os.path.join(c.dir, "fetched")
        out = c.ctl("fetch", JOB, str(wid), "-o", dl)
        log("dynprofctl fetch:\n%s" % out.stdout)
        check(out.returncode == 0 and out.stdout.count("checked") ==
              len(RANKS), "fetch:\n%s" % out.stdout)
        for r in RANKS:
            a = os.path.join(dl, "rank-%d.tar.zst" % r)
            check(sha_of(a) == sha_of(os.path.join(wdir, "rank-%d.tar.zst" %
                                                    r)), "rank %d fetched" % r)
            names = subprocess.run(["tar", "--zstd", "-tf", a], check=True,
                                   capture_output=True, text=True).stdout
            check("trace.json" in names.split() and os.path.isfile(
                os.path.join(dl, "rank-%d" % r, "trace.json")),
                "rank %d: %s" % (r, names))


if __name__ == "__main__":
    main(test)
