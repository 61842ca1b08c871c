"""A canned coordinator for dynprofctl fetch's component tests: Python's
http.server on 127.0.0.1 answering GET /v1/jobs/JOB/windows/1/traces with
an index the test writes, and whatever else the test's handler serves."""

import http.server
import io
import json
import socketserver
import subprocess
import tarfile


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def close(self):
        self.shutdown()
        self.server_close()


class Handler(http.server.BaseHTTPRequestHandler):
    """A subclass sets job and index, and calls answer_index() first."""
    job = None
    index = None

    def log_message(self, *a):
        pass

    def answer_index(self):
        """Answers the index if it is what was asked: True, else False."""
        if self.path != "/v1/jobs/%s/windows/1/traces" % self.job:
            return False
        body = json.dumps(self.index).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True


def tar_zst(members):
    """A tar + zstd archive of members: (TarInfo, bytes or None)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return subprocess.run(["zstd", "-q", "-c"], input=raw.getvalue(),
                          stdout=subprocess.PIPE, check=True).stdout
