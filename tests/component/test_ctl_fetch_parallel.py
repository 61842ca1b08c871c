#!/usr/bin/env python3
"""dynprofctl fetch downloads ranks in parallel, at most --jobs at once.

A coordinator (Python's http.server on 127.0.0.1, canned answers) gives an
index of 8 ranks whose archives a second route of the same server sends
slowly, in chunks, counting the GETs in flight.  With --jobs 4 more than one
is in flight at once and never more than 4; with --jobs 1 exactly one.  Either
way every rank is checked and unpacked, and the one whose object was
corrupted in the store (same size, one byte changed) fails alone.  Half the
ranks are plain URLs, half s3:// locations read through the presigned URL the
index gives beside them.  On a pseudo-terminal a progress bar (bytes of the
index's total, ranks done and failed, rate) is drawn; piped, none of it.
--jobs outside 1..64 is refused, said.
"""

import hashlib
import io
import os
import pty
import select
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
import fetch_index  # noqa: E402

BUILD = os.environ.get("DYNPROF_BUILD_DIR", "build")
CTL = os.path.join(BUILD, "ctl", "dynprofctl")
NRANKS = 8
BAD = 3				# the rank whose stored object is corrupted
CHUNKS = 10			# an archive is sent in this many pieces
PAUSE_S = 0.06			# with this pause before each
DEADLINE_S = 120


class Flight:
    """GETs of archives in flight: now, and the most seen at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = self.most = self.gets = 0

    def reset(self):
        with self.lock:
            self.now = self.most = self.gets = 0


def handler(index, objects, flight):
    class H(fetch_index.Handler):
        job = "par-j"

        def do_GET(self):
            if self.answer_index():
                return
            data = objects.get(self.path.split("?")[0])
            if data is None:
                self.send_error(404)
                return
            with flight.lock:
                flight.now += 1
                flight.gets += 1
                flight.most = max(flight.most, flight.now)
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                step = (len(data) + CHUNKS - 1) // CHUNKS
                for i in range(0, len(data), step):
                    time.sleep(PAUSE_S)
                    self.wfile.write(data[i:i + step])
                self.wfile.flush()
            except OSError:
                pass
            finally:
                with flight.lock:
                    flight.now -= 1
    H.index = index
    return H


def tar_zst(files):
    """A tar + zstd archive of files: (name, bytes)."""
    members = []
    for name, data in files:
        info = tarfile.TarInfo(name)
        info.mode, info.mtime = 0o644, 1700000000
        members.append((info, data))
    return fetch_index.tar_zst(members)


def env():
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("AWS_") or k in ("DYNPROF_TOKEN",
                                         "DYNPROF_S3_ENDPOINT"):
            del e[k]
    return e


def ctl_args(base, out, *extra):
    return [CTL, "--coordinator", base, "fetch", "par-j", "1", "--out",
            out] + list(extra)


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)


def run_pty(args):
    """Runs args with stdout and stderr on a pseudo-terminal: (rc, text)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(args[0], args, env())
        finally:
            os._exit(127)
    out = b""
    t0 = time.monotonic()
    while time.monotonic() - t0 < DEADLINE_S:
        r, _, _ = select.select([fd], [], [], 1)
        if not r:
            continue
        try:
            b = os.read(fd, 65536)
        except OSError:		# EIO: the child closed the terminal
            break
        if not b:
            break
        out += b
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def check_ranks(text, out, archives, what):
    """Every rank said, checked and unpacked; BAD alone failed."""
    for rank, data in sorted(archives.items()):
        if rank == BAD:
            check("rank %d: sha256 mismatch: " % rank in text and
                  not os.path.exists(os.path.join(out, "rank-%d" % rank)) and
                  not os.path.exists(os.path.join(
                      out, "rank-%d.tar.zst" % rank)),
                  "%s: the corrupted rank %d:\n%s" % (what, rank, text))
            continue
        line = ("rank %d: %s/rank-%d.tar.zst, %d bytes, sha256 %s checked, "
                "unpacked into %s/rank-%d/ (2 files)" % (
                    rank, out, rank, len(data),
                    hashlib.sha256(data).hexdigest(), out, rank))
        check(line in text, "%s: no line %r in:\n%s" % (what, line, text))
        with open(os.path.join(out, "rank-%d" % rank, "trace.json"),
                  "rb") as f:
            check(f.read() == b'{"rank": %d}\n' % rank + b"x" * 65536 * 3,
                  "%s: rank-%d/trace.json differs" % (what, rank))
    check("window 1 of job par-j: %d traces fetched into %s, 1 failed, 0 not "
          "collected" % (NRANKS - 1, out) in text,
          "%s: the summary:\n%s" % (what, text))
    check([x for x in os.listdir(out) if x.startswith(".")] == [],
          "%s: left behind: %s" % (what, os.listdir(out)))


def main():
    if not os.path.exists(CTL):
        print("no %s" % CTL)
        return 77
    tmp = tempfile.mkdtemp(prefix="dynprof-fetch-parallel-")
    srv = None
    try:
        index, objects, archives = {"traces": []}, {}, {}
        flight = Flight()
        srv = fetch_index.Server(("127.0.0.1", 0),
                                 handler(index, objects, flight))
        base = "http://127.0.0.1:%d" % srv.server_address[1]
        for rank in range(NRANKS):
            # Random bytes: zstd keeps them about as large.
            data = tar_zst([("trace.json", b'{"rank": %d}\n' % rank +
                             b"x" * 65536 * 3), ("pad", os.urandom(65536))])
            archives[rank] = data
            stored = data
            if rank == BAD:
                stored = bytearray(data)
                stored[len(data) // 2] ^= 0xff
                stored = bytes(stored)
            objects["/obj/%d" % rank] = stored
            e = {"rank": rank, "state": "collected", "size": len(data),
                 "sha256": hashlib.sha256(data).hexdigest()}
            if rank % 2 == 0:
                e["location"] = base + "/obj/%d" % rank
            else:
                e["location"] = "s3://traces/par-j/1/rank-%d.tar.zst" % rank
                e["url"] = base + "/obj/%d?X-Amz-Signature=00" % rank
            index["traces"].append(e)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        total = sum(len(d) for d in archives.values())

        # The default is 4 at once.
        flight.reset()
        out = os.path.join(tmp, "out-default")
        p = subprocess.run(ctl_args(base, out), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=env(),
                           timeout=DEADLINE_S)
        text = p.stdout.decode(errors="replace")
        check(p.returncode == 1 and 1 < flight.most <= 4,
              "the default: %d at once" % flight.most)
        check_ranks(text, out, archives, "the default")

        for jobs in (4, 1):
            flight.reset()
            out = os.path.join(tmp, "out-%d" % jobs)
            t0 = time.monotonic()
            p = subprocess.run(ctl_args(base, out, "--jobs", str(jobs)),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env(),
                               timeout=DEADLINE_S)
            took = time.monotonic() - t0
            text = p.stdout.decode(errors="replace")
            print(text)
            print("--jobs %d: %.2f s, %d GETs, at most %d in flight" % (
                jobs, took, flight.gets, flight.most))
            check(p.returncode == 1, "--jobs %d: exit %d" % (jobs,
                                                             p.returncode))
            check(flight.gets == NRANKS, "--jobs %d: %d GETs" % (
                jobs, flight.gets))
            if jobs == 1:
                check(flight.most == 1, "--jobs 1: %d GETs at once" %
                      flight.most)
            else:
                check(1 < flight.most <= jobs, "--jobs %d: %d GETs at once" %
                      (jobs, flight.most))
            check_ranks(text, out, archives, "--jobs %d" % jobs)
            check("fetching:" not in text and "\r" not in text and
                  "\033" not in text, "--jobs %d: a progress bar on a pipe" %
                  jobs)

        # On a terminal: the bar, then the same lines.
        out = os.path.join(tmp, "out-tty")
        rc, text = run_pty(ctl_args(base, out, "--jobs", "4"))
        print(repr(text))
        check(rc == 1, "on a terminal: exit %d" % rc)
        bars = [x for x in text.split("\r") if x.startswith("fetching: ")]
        check(len(bars) >= 2, "on a terminal: %d bars drawn" % len(bars))
        tot = "of %.1f KiB, " % (total / 1024.0) if total < 1 << 20 else \
            "of %.1f MiB, " % (total / 1048576.0)
        check(all(tot in b and "/%d ranks done, " % NRANKS in b and
                  " failed, " in b and "/s\033[K" in b for b in bars),
              "on a terminal: bars %r (total %s)" % (bars, tot))
        check(any("0/%d ranks done, 0 failed" % NRANKS in b for b in bars),
              "on a terminal: no bar before any rank is done: %r" % bars)
        plain = "\n".join(x.split("\r")[-1] for x in text.replace(
            "\r\n", "\n").split("\n"))
        check_ranks(plain.replace("\033[K", ""), out, archives,
                    "on a terminal")
        check(text.rstrip("\r\n").split("\n")[-1].startswith(
            "window 1 of job par-j"), "on a terminal: the last line")

        for bad in ("0", "65", "four"):
            p = subprocess.run(ctl_args(base, os.path.join(tmp, "none"),
                                        "--jobs", bad),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env(),
                               timeout=DEADLINE_S)
            text = p.stdout.decode(errors="replace")
            check(p.returncode != 0 and "fetch: --jobs: downloads at once, "
                  "from 1 to 64, not \"%s\"" % bad in text and
                  not os.path.exists(os.path.join(tmp, "none")),
                  "--jobs %s: %s" % (bad, text))
        print("PASS")
        return 0
    finally:
        if srv is not None:
            srv.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
