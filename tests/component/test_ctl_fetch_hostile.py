#!/usr/bin/env python3
"""dynprofctl fetch against a hostile traces index.

A coordinator (here Python's http.server on 127.0.0.1, canned answers) says
where each rank's archive is; what it says comes from agents.  An index whose
locations are a FIFO nobody writes, /dev/zero, a server that streams without
end, one that sends its headers and then nothing, and a directory must not
stall dynprofctl nor fill the operator's disk: each such rank fails, said,
within a bounded time and having written at most the size the agent
reported, and the one honest archive beside them is fetched and checked.
"""

import hashlib
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ.get("DYNPROF_BUILD_DIR", "build")
CTL = os.path.join(BUILD, "ctl", "dynprofctl")
SIZE = 1000			# what the agent "reported" of every archive
STALL_S = 3			# fetch --stall: a silent download given up
DEADLINE_S = 120		# a stall shows as this passing
SILENT_S = 300			# how long the silent server holds its answer


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def handler(index, stop):
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.path == "/v1/jobs/hostile-j/windows/1/traces":
                body = json.dumps(index).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.path == "/endless":
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
    return H


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
        good = os.path.join(tmp, "good.tar.zst")
        data = os.urandom(SIZE)
        with open(good, "wb") as f:
            f.write(data)
        sha = hashlib.sha256(data).hexdigest()
        index = {"traces": []}
        srv = Server(("127.0.0.1", 0), handler(index, stop))
        base = "http://127.0.0.1:%d" % srv.server_address[1]
        where = {0: fifo, 1: "/dev/zero", 2: base + "/endless",
                 3: base + "/silent", 4: tmp, 5: good}
        for rank, loc in sorted(where.items()):
            index["traces"].append({"rank": rank, "state": "collected",
                                    "location": loc, "size": SIZE,
                                    "sha256": sha})
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
                for n in os.listdir(out):
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
        check(sorted(os.listdir(out)) == ["rank-5.tar.zst"],
              "left in the target: %s" % os.listdir(out))
        with open(os.path.join(out, "rank-5.tar.zst"), "rb") as f:
            check(f.read() == data, "the honest archive differs")
        for rank in range(5):
            check(("rank %d:" % rank) in text,
                  "rank %d's failure not said" % rank)
        check("6 traces" not in text and "1 traces fetched" in text,
              "the summary: %s" % text)
        print("PASS")
        return 0
    finally:
        stop.set()
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
