#!/usr/bin/env python3
"""dynprofctl fetch against a hostile traces index.

A coordinator (here Python's http.server on 127.0.0.1, canned answers) says
where each rank's archive is; what it says comes from agents.  An index whose
locations are a FIFO nobody writes, /dev/zero, a server that streams without
end, one that sends its headers and then nothing, and a directory must not
stall dynprofctl nor fill the operator's disk: each such rank fails, said,
within a bounded time and having written at most the size the agent
reported, and the one honest archive beside them is fetched and checked.

Each checked archive is unpacked into DIR/rank-N/, and an archive is what its
store held: one whose hash is right may still be hostile.  An entry ../x, an
absolute path, a symbolic link out followed by a file written through it, and
more entries than an agent packs each fail their rank, said, with nothing
written outside DIR/rank-N/ (the archive kept beside it, no rank-N/ left);
the honest archive's entries come out as packed, its FIFO and hard link left
out and said, no setuid bit, no owner but the user's.  A second fetch does not
write into the rank-5/ the first made, unless --force.
"""

import hashlib
import os
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
SIZE = 1000			# what the agent "reported" of every archive
STALL_S = 3			# fetch --stall: a silent download given up
DEADLINE_S = 120		# a stall shows as this passing
SILENT_S = 300			# how long the silent server holds its answer
ENTRIES = 65536			# what dynprofctl unpacks of one archive, at most


def handler(index, stop):
    class H(fetch_index.Handler):
        job = "hostile-j"

        def do_GET(self):
            if self.answer_index():
                return
            if self.path == "/endless":
                # No length: bytes until the client goes.
                self.send_response(200)
                self.end_headers()
                chunk = b"z" * 65536
                try:
                    while not stop.is_set():
                        self.wfile.write(chunk)
                except OSError:
                    pass
            elif self.path == "/silent":
                self.send_response(200)
                self.send_header("Content-Length", str(SIZE))
                self.end_headers()
                self.wfile.flush()
                stop.wait(SILENT_S)
            else:
                self.send_error(404)
    H.index = index
    return H


def entry(name, kind=tarfile.REGTYPE, mode=0o644, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    info.uid, info.gid, info.mtime = 4321, 4321, 1700000000
    return info


def tree(top):
    """Every path under top, links not followed."""
    out = []
    for d, dirs, files in os.walk(top):
        out += [os.path.join(d, x) for x in dirs + files]
    return sorted(out)


def fetch(base, out, *extra):
    env = dict(os.environ)
    env.pop("DYNPROF_TOKEN", None)
    return subprocess.run([CTL, "--coordinator", base, "fetch", "hostile-j",
                           "1", "--out", out, "--stall", str(STALL_S)] +
                          list(extra), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env, timeout=DEADLINE_S)


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)


def main():
    if not os.path.exists(CTL):
        print("no %s" % CTL)
        return 77
    tmp = tempfile.mkdtemp(prefix="dynprof-fetch-hostile-")
    stop = threading.Event()
    srv = None
    try:
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        away = os.path.join(tmp, "away")	# outside DIR: stays empty
        os.mkdir(away)
        victim = os.path.join(tmp, "victim")
        with open(victim, "w") as f:
            f.write("untouched\n")
        trace = b'{"traceEvents": []}\n' + os.urandom(SIZE)
        plugin = os.urandom(3 * SIZE)
        archives = {
            5: [(entry("plugins", tarfile.DIRTYPE, 0o755), None),
                (entry("plugins/profile", tarfile.DIRTYPE, 0o7777), None),
                (entry("trace.json", mode=0o4755), trace),
                (entry("plugins/profile/host.xplane.pb"), plugin),
                (entry("pipe", tarfile.FIFOTYPE), None),
                (entry("hard", tarfile.LNKTYPE, link=victim), None)],
            6: [(entry("ok.json"), b"{}"),
                (entry("../dotdot"), b"out"),
                (entry("../../dotdot2"), b"out")],
            7: [(entry(os.path.join(away, "abs")), b"out")],
            8: [(entry("link", tarfile.SYMTYPE, link=away), None),
                (entry("link/through"), b"out")],
            9: [(entry("e%d" % i), b"") for i in range(ENTRIES + 1)],
        }
        index = {"traces": []}
        srv = fetch_index.Server(("127.0.0.1", 0), handler(index, stop))
        base = "http://127.0.0.1:%d" % srv.server_address[1]
        where = {0: fifo, 1: "/dev/zero", 2: base + "/endless",
                 3: base + "/silent", 4: tmp}
        bad_sha = hashlib.sha256(b"x").hexdigest()
        for rank, loc in sorted(where.items()):
            index["traces"].append({"rank": rank, "state": "collected",
                                    "location": loc, "size": SIZE,
                                    "sha256": bad_sha})
        for rank, members in sorted(archives.items()):
            data = fetch_index.tar_zst(members)
            path = os.path.join(tmp, "rank%d.tar.zst" % rank)
            with open(path, "wb") as f:
                f.write(data)
            index["traces"].append({
                "rank": rank, "state": "collected", "location": path,
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest()})
        good = os.path.join(tmp, "rank5.tar.zst")
        before = tree(tmp)
        threading.Thread(target=srv.serve_forever, daemon=True).start()

        out = os.path.join(tmp, "out")
        env = dict(os.environ)
        env.pop("DYNPROF_TOKEN", None)
        p = subprocess.Popen([CTL, "--coordinator", base, "fetch",
                              "hostile-j", "1", "--out", out,
                              "--stall", str(STALL_S)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=env)
        t0 = time.monotonic()
        biggest = 0
        while p.poll() is None and time.monotonic() - t0 < DEADLINE_S:
            # The operator's disk: what the fetch has written so far.
            if os.path.isdir(out):
                for n in [x for x in os.listdir(out) if x.startswith(
                        tuple("%srank-%d" % (d, r) for d in ("", ".")
                              for r in where))]:
                    try:
                        biggest = max(biggest, os.path.getsize(
                            os.path.join(out, n)))
                    except OSError:
                        pass
            time.sleep(0.05)
        took = time.monotonic() - t0
        if p.poll() is None:
            p.kill()
            text = p.communicate()[0].decode(errors="replace")
            check(False, "fetch still running after %d s, %d bytes in its "
                  "biggest file:\n%s" % (DEADLINE_S, biggest, text))
        text = p.communicate()[0].decode(errors="replace")
        print(text)
        print("fetch took %.1f s, biggest file %d bytes" % (took, biggest))
        check(p.returncode != 0, "fetch said all was well")
        check(biggest <= SIZE + 65536,
              "a file of %d bytes for archives of %d" % (biggest, SIZE))
        # Hostile archives: kept as checked, not unpacked, nothing
        # written outside their rank's directory.
        check(sorted(os.listdir(out)) == ["rank-5", "rank-5.tar.zst"] + [
            "rank-%d.tar.zst" % r for r in (6, 7, 8, 9)],
            "left in the target: %s" % os.listdir(out))
        check(tree(tmp) == sorted(before + [out] + [
            os.path.join(out, x) for x in os.listdir(out)] +
            tree(os.path.join(out, "rank-5"))),
            "written outside DIR/rank-5: %s" % sorted(
                set(tree(tmp)) - set(before)))
        check(os.listdir(away) == [] and open(victim).read() == "untouched\n",
              "outside written: %s" % os.listdir(away))
        with open(good, "rb") as f, \
                open(os.path.join(out, "rank-5.tar.zst"), "rb") as g:
            check(f.read() == g.read(), "the honest archive differs")
        for rank in range(5):
            check(("rank %d:" % rank) in text,
                  "rank %d's failure not said" % rank)
        for rank, why in ((6, "entry ../dotdot: "), (7, "entry %s/abs: " %
                                                     away),
                          (8, "entry link/through: under link, a link left "
                           "out"),
                          (9, "more than %d entries" % ENTRIES)):
            check("rank %d: %s/rank-%d.tar.zst: %s" % (rank, out, rank, why)
                  in text and "not unpacked" in text,
                  "rank %d's hostile archive not said (%s)" % (rank, why))
        # The honest one: as packed, less its FIFO and hard link (said),
        # no setuid bit, the user's own.
        r5 = os.path.join(out, "rank-5")
        check(tree(r5) == sorted(os.path.join(r5, x) for x in (
            "plugins", "plugins/profile", "plugins/profile/host.xplane.pb",
            "trace.json")), "rank-5 holds %s" % tree(r5))
        with open(os.path.join(r5, "trace.json"), "rb") as f:
            check(f.read() == trace, "rank-5/trace.json differs")
        with open(os.path.join(r5, "plugins/profile/host.xplane.pb"),
                  "rb") as f:
            check(f.read() == plugin, "rank-5's plugin file differs")
        for p in tree(r5):
            st = os.lstat(p)
            check(st.st_mode & 0o7022 == 0 and st.st_uid == os.getuid(),
                  "%s: mode %o uid %d" % (p, st.st_mode, st.st_uid))
        for name in ("pipe", "hard"):
            check("rank 5: entry %s left out: not a regular file nor a "
                  "directory" % name in text, "%s not said" % name)
        check(("rank 5: %s/rank-5.tar.zst, %d bytes, sha256 %s checked, "
               "unpacked into %s/rank-5/ (2 files)" % (
                   out, os.path.getsize(good),
                   hashlib.sha256(open(good, "rb").read()).hexdigest(), out))
              in text, "rank 5's progress line")
        check("10 traces" not in text and "1 traces fetched" in text,
              "the summary: %s" % text)

        # Again: rank-5/ is not written into, unless --force.
        with open(os.path.join(r5, "mine"), "w") as f:
            f.write("the user's\n")
        p = fetch(base, out, "--ranks", "5")
        text = p.stdout.decode(errors="replace")
        print(text)
        check(p.returncode != 0 and "%s/rank-5 exists: not written into "
              "(--force replaces it)" % out in text, "a second fetch")
        check(open(os.path.join(r5, "mine")).read() == "the user's\n" and
              [x for x in os.listdir(out) if x.startswith(".")] == [],
              "the second fetch wrote into rank-5/: %s" % os.listdir(out))
        p = fetch(base, out, "--ranks", "5", "--force")
        text = p.stdout.decode(errors="replace")
        print(text)
        check(p.returncode == 0 and "unpacked into" in text and
              not os.path.exists(os.path.join(r5, "mine")) and
              open(os.path.join(r5, "trace.json"), "rb").read() == trace and
              [x for x in os.listdir(out) if x.startswith(".")] == [],
              "fetch --force: %s" % os.listdir(out))
        # --no-unpack: the archives only, as before.
        out2 = os.path.join(tmp, "out2")
        p = fetch(base, out2, "--ranks", "5-9", "--no-unpack")
        check(p.returncode == 0 and sorted(os.listdir(out2)) == [
            "rank-%d.tar.zst" % r for r in range(5, 10)],
            "fetch --no-unpack: %s" % p.stdout.decode(errors="replace"))
        print("PASS")
        return 0
    finally:
        stop.set()
        if srv is not None:
            srv.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
