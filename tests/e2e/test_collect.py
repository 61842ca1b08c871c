#!/usr/bin/python3
"""--trace-store: every rank's trace of a window packed into the shared
directory exactly once, across an agent SIGKILLed while they wait to be
collected; the archives are what tar and sha256sum read back, and a symbolic
link in a trace directory, to a file or a directory outside it, is not
followed (a file whose name starts with ".." is an ordinary file inside).

The coordinator learns each rank's collection once, from the agent's
`collected` events: the window's index (GET .../windows/W/traces), the
summary's counts, /ranks and dynprofctl status give each archive's location,
size and sha256, and still do after the coordinator restarts; `dynprofctl
fetch` downloads them with their hashes checked and unpacks each into
DIR/rank-N/ as its trace directory was (trace.json, rank 1's big.bin, rank
0's ..data, the links left out by the agent), and fails loudly on an archive
changed in the store."""

import hashlib
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, check_collected_once, log, main,  # noqa: E402
                     wait_for)

JOB = "collect-%d" % os.getpid()
RANKS = [0, 1, 2, 3]
SETTLE = 2
BIG_MB = 64     # rank 1's trace: random, so zstd cannot shrink it


def collected_lines(text, wid):
    """rank -> the sha256 of each "collected" line for window wid."""
    out = {}
    for m in re.finditer(r"collected job %s window %d rank (\d+): \S+, (\d+) "
                         r"bytes, sha256 ([0-9a-f]{64})" % (re.escape(JOB), wid),
                         text):
        out.setdefault(int(m.group(1)), []).append((int(m.group(2)), m.group(3)))
    return out


def regular_files(top):
    """relative path -> sha256 of every regular file under top (links not
    followed), and the directories."""
    files, dirs = {}, []
    for d, ds, fs in os.walk(top):
        rel = os.path.relpath(d, top)
        dirs += [os.path.normpath(os.path.join(rel, x)) for x in ds
                 if not os.path.islink(os.path.join(d, x))]
        for x in fs:
            p = os.path.join(d, x)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    files[os.path.normpath(os.path.join(rel, x))] = \
                        hashlib.sha256(f.read()).hexdigest()
    return files, sorted(dirs)


def test():
    with Cluster("collect") as c:
        n, store, flags = c.start_collecting(SETTLE)
        for rank in RANKS:
            n.start_rank(JOB, rank, rate=50)
        c.wait_ranks(JOB, len(RANKS), min_step=5)
        w = c.add_window(JOB, {"in_steps": 20, "steps": 20})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        c.wait_window_done(JOB, wid, RANKS, timeout=90)

        # Ways out of rank 0's trace directory, planted as it ends.
        tdir = os.path.join(n.out, "rank0_start%d_stop%d" % (a, b))
        check(os.path.isdir(tdir), "no trace directory %s" % tdir)
        with open(os.path.join(n.dir, "secret"), "w") as f:
            f.write("SECRET-OUTSIDE\n")
        os.symlink("../../secret", os.path.join(tdir, "escape"))
        os.symlink(n.dir, os.path.join(tdir, "up"))
        with open(os.path.join(tdir, "..data"), "w") as f:
            f.write("inside all the same\n")

        # A large trace on rank 1, so that its packing takes a while.
        big = os.path.join(n.out, "rank1_start%d_stop%d" % (a, b), "big.bin")
        with open(big, "wb") as f:
            for _ in range(BIG_MB):
                f.write(os.urandom(1 << 20))

        # Every rank queued, then the agent killed in the middle of rank
        # 1's packing (its temporary file there, no archive yet).
        queue = os.path.join(n.shm, "dynprof-agent.collect")

        def queued():
            try:
                lines = open(queue).read().splitlines()[1:]
            except OSError:
                return None
            got = {int(x.split()[2]) for x in lines
                   if x.split()[:2] == [JOB, str(wid)]}
            return got if got == set(RANKS) else None
        wait_for(queued, 30, "every rank in the queue file", interval=0.05)
        wdir = os.path.join(store, JOB, "window-%d" % wid)
        part = os.path.join(wdir, ".rank-1.tar.zst.part")
        wait_for(lambda: os.path.exists(part) and os.path.getsize(part) > 0,
                 60, "rank 1 being packed", interval=0.01)
        n.agent.kill9()
        done_before = [r for r in RANKS if os.path.exists(
            os.path.join(wdir, "rank-%d.tar.zst" % r))]
        check(1 not in done_before, "rank 1 packed before the kill: make "
              "its trace larger")
        log("agent SIGKILLed packing rank 1 (%d bytes written), %d of %d "
            "collected" % (os.path.getsize(part), len(done_before), len(RANKS)))
        n.start_agent(extra=flags)

        def all_collected():
            text = n.agent.output()
            got = collected_lines(text, wid)
            return got if set(got) == set(RANKS) else None
        wait_for(all_collected, 90, "every rank collected", interval=0.2)
        # Longer than the settle time and a retry: nothing is packed twice.
        time.sleep(2 * SETTLE + 1)
        got = collected_lines(n.agent.output(), wid)
        for r in RANKS:
            check(len(got[r]) == 1, "rank %d collected %d times: %s" % (
                r, len(got[r]), got[r]))
            path = os.path.join(wdir, "rank-%d.tar.zst" % r)
            data = open(path, "rb").read()
            size, sha = got[r][0]
            check(len(data) == size and hashlib.sha256(data).hexdigest() == sha,
                  "rank %d: archive %d bytes sha256 %s, reported %d %s" % (
                      r, len(data), hashlib.sha256(data).hexdigest(), size, sha))
            names = subprocess.run(["tar", "--zstd", "-tf", path], check=True,
                                   capture_output=True, text=True).stdout.split()
            check("trace.json" in names, "rank %d: no trace.json in %s" % (r, names))
            if r == 1:
                check("big.bin" in names, "rank 1: no big.bin in %s" % names)
            check(not [x for x in names if x.startswith("/") or
                       ".." in x.split("/")], "rank %d: entries %s" % (r, names))
        check(sorted(os.listdir(wdir)) == ["rank-%d.tar.zst" % r for r in RANKS],
              "the store holds %s" % os.listdir(wdir))
        r0 = os.path.join(wdir, "rank-0.tar.zst")
        names = subprocess.run(["tar", "--zstd", "-tf", r0], check=True,
                               capture_output=True, text=True).stdout.split()
        check("..data" in names, "rank 0: ..data not packed: %s" % names)
        check("escape" not in names and not [x for x in names if
                                             x.startswith("up")],
              "rank 0: a link followed: %s" % names)
        raw = subprocess.run(["zstd", "-dc", r0], check=True,
                             capture_output=True).stdout
        check(b"SECRET-OUTSIDE" not in raw and b"agent.log" not in raw,
              "rank 0: bytes from outside its directory in the archive")
        # The queue is empty once all are in, and once the coordinator
        # committed every report (a report line starts with + or !).
        def queue_empty():
            lines = open(queue).read().splitlines()[1:]
            return lines == [] or None
        wait_for(queue_empty, 30, "the queue file emptied")

        # The coordinator's index: each rank once, as the agent logged it.
        idx = c.wait_traces_indexed(JOB, wid, len(RANKS), 30,
                                    "every rank in the coordinator's index")
        check_index(idx, got, wdir)
        st = c.status(JOB)
        win = [x for x in st["windows"] if x["id"] == wid][0]
        check(win["rank_counts"]["collected"] == len(RANKS) and
              win["rank_counts"]["collect_failed"] == 0,
              "summary counts: %s" % win["rank_counts"])
        for r in st["ranks"]:
            t = r.get("trace")
            check(t is not None and t["state"] == "collected" and
                  t["window"] == wid and t["sha256"] == got[r["rank"]][0][1],
                  "rank %d in /ranks: trace %s" % (r["rank"], t))
        check_collected_once(st, wid)
        out = c.ctl("status", JOB)
        check(out.returncode == 0 and "COLLECTED" in out.stdout and
              "collected (window %d): %s" % (wid, os.path.join(
                  os.path.realpath(wdir), "rank-3.tar.zst")) in out.stdout,
              "dynprofctl status:\n%s" % out.stdout)
        code, body = c.http("GET", "/v1/jobs/%s/windows/999/traces" % JOB)
        check(code == 404, "index of no window: %s %s" % (code, body))

        # Restarted, the coordinator has them from its store.
        c.coord.stop()
        c.start_coordinator()
        check_index(c.wait_traces_indexed(JOB, wid, len(RANKS), 30,
                                          "the index after a restart"),
                    got, wdir)

        # dynprofctl fetch: every archive, hashes checked, unpacked into
        # rank-N/ as the rank's trace directory was.
        dl = os.path.join(c.dir, "fetched")
        out = c.ctl("fetch", JOB, str(wid), "--out", dl)
        check(out.returncode == 0, "fetch:\n%s" % out.stdout)
        for r in RANKS:
            data = open(os.path.join(dl, "rank-%d.tar.zst" % r), "rb").read()
            check(hashlib.sha256(data).hexdigest() == got[r][0][1],
                  "rank %d fetched differs" % r)
            src = os.path.join(n.out, "rank%d_start%d_stop%d" % (r, a, b))
            want, got_files = regular_files(src), regular_files(
                os.path.join(dl, "rank-%d" % r))
            check("trace.json" in want[0] and got_files == want,
                  "rank %d unpacked: %s, its trace directory: %s" % (
                      r, got_files, want))
            check("checked, unpacked into %s/rank-%d/ (%d files)" % (
                dl, r, len(want[0])) in out.stdout,
                "rank %d's line:\n%s" % (r, out.stdout))
        check("big.bin" in regular_files(os.path.join(dl, "rank-1"))[0] and
              open(os.path.join(dl, "rank-0", "..data")).read() ==
              "inside all the same\n" and not [
                  x for x in os.listdir(os.path.join(dl, "rank-0"))
                  if x in ("escape", "up")],
              "rank 0 or 1 unpacked: %s" % os.listdir(os.path.join(dl,
                                                                   "rank-0")))
        check(sorted(os.listdir(dl)) == sorted(
            ["rank-%d" % r for r in RANKS] +
            ["rank-%d.tar.zst" % r for r in RANKS]),
            "fetched: %s" % os.listdir(dl))
        # One archive changed in the store: its fetch fails, loudly.
        victim = os.path.join(wdir, "rank-2.tar.zst")
        with open(victim, "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 0xff]))
        dl2 = os.path.join(c.dir, "fetched2")
        out = c.ctl("fetch", JOB, str(wid), "--out", dl2, "--ranks", "1-2")
        check(out.returncode == 1 and "rank 2: sha256 mismatch" in out.stdout,
              "fetch of a corrupted archive:\n%s" % out.stdout)
        check(sorted(os.listdir(dl2)) == ["rank-1", "rank-1.tar.zst"],
              "fetched despite the mismatch: %s" % os.listdir(dl2))


def check_index(idx, got, wdir):
    """The window's index holds each rank once, as its agent logged it."""
    check([t["rank"] for t in idx["traces"]] == RANKS,
          "index ranks: %s" % idx["traces"])
    for t in idx["traces"]:
        size, sha = got[t["rank"]][0]
        check(t["state"] == "collected" and t["size"] == size and
              t["sha256"] == sha and t["node"] == "n0" and
              t["location"] == os.path.join(os.path.realpath(wdir),
                                            "rank-%d.tar.zst" % t["rank"]),
              "index entry %s, logged %d %s" % (t, size, sha))


if __name__ == "__main__":
    main(test)
