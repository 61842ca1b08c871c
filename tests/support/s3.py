"""A real S3-compatible server on loopback for the trace upload tests:
s3rver (npm, pinned in tests/s3/package.json, installed once per build tree
with npm ci), and in front of it a proxy that checks what s3rver does not:
each request's AWS SigV4 signature, recomputed with botocore from the secret
key, and that a PUT's or POST's body has the sha256 its
x-amz-content-sha256 header says.  A request that fails either is answered 403 as S3 would
(SignatureDoesNotMatch, XAmzContentSHA256Mismatch) and never reaches
s3rver.  A presigned URL (the coordinator's, for dynprofctl fetch) is
checked against the one botocore signs for the same path and time.  The proxy can also be told to refuse the next N PUTs (503
SlowDown), to see the agent retry, to refuse the PUT of a path's part N
(fail_part = (path, N): 500 InternalError, once), to fail every PUT of a path for good
(faults[path] = "deny": 403 AccessDenied) or to take its request whole
and never answer (faults[path] = "hang": the connection held open until
the proxy stops), and counts what it forwarded."""

import hashlib
import http.client
import http.server
import os
import re
import shutil
import socketserver
import subprocess
import threading

from cluster import Failure, Proc, check, log, npm_ci, wait_for

ACCESS_KEY = "S3RVER"       # s3rver's own account: the keys it knows
SECRET_KEY = "S3RVER"
REGION = "us-east-1"
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3")


def npm_install():
    """s3rver's pinned packages in the build tree; returns the path of its
    command."""
    return os.path.join(npm_ci(SRC, "test-s3"), ".bin", "s3rver")


class Verifier(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _fail(self, code, s3code, msg):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s"
                "</Code><Message>%s</Message></Error>" % (s3code, msg)).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _presigned_ok(self):
        """A presigned URL (the signature in its query): botocore signs the
        same URL at the same time (X-Amz-Date), and the signatures must be
        the same; an expired URL is refused as S3 does."""
        import datetime
        import urllib.parse
        from botocore.auth import S3SigV4QueryAuth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        base, _, query = self.path.partition("?")
        q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        try:
            when = datetime.datetime.strptime(q["X-Amz-Date"],
                                              "%Y%m%dT%H%M%SZ")
            expires = int(q["X-Amz-Expires"])
            key, _, region = q["X-Amz-Credential"].split("/")[:3]
        except (KeyError, ValueError) as e:
            return "a presigned URL without %s" % e
        if key != ACCESS_KEY:
            return "unknown access key %s" % key
        if datetime.datetime.utcnow() > when + datetime.timedelta(
                seconds=expires):
            return "presigned URL expired"
        req = AWSRequest(method=self.command, url="http://%s%s" % (
            self.headers["Host"], base))
        auth = S3SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET_KEY), "s3",
                                region, expires=expires)
        # add_auth() at X-Amz-Date rather than now.
        req.context["timestamp"] = q["X-Amz-Date"]
        auth._modify_request_before_signing(req)
        want = auth.signature(auth.string_to_sign(
            req, auth.canonical_request(req)), req)
        if want != q.get("X-Amz-Signature"):
            return "presigned %s, botocore signs %s for %s" % (
                self.path, want, req.url)
        return None

    def _signature_ok(self, body):
        if "X-Amz-Signature=" in self.path:
            return self._presigned_ok()
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/"
                     r"aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$",
                     self.headers.get("Authorization", ""))
        if m is None:
            return "no SigV4 Authorization header"
        key, _, region, signed, sig = m.groups()
        if key != ACCESS_KEY:
            return "unknown access key %s" % key
        names = signed.split(";")
        hdrs = {}
        for n in names:
            if self.headers.get(n) is None:
                return "signed header %s missing" % n
            hdrs[n] = self.headers.get(n)
        req = AWSRequest(method=self.command,
                         url="http://%s%s" % (self.headers["Host"], self.path),
                         data=body, headers=hdrs)
        req.context["timestamp"] = self.headers.get("X-Amz-Date", "")
        auth = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", region)
        want = auth.signature(auth.string_to_sign(req,
                                                  auth.canonical_request(req)),
                              req)
        return None if want == sig else "signature %s, expected %s" % (sig, want)

    def _handle(self):
        try:
            self._forward()
        except Exception as e:  # said, never a silent close
            self.server.s3.errors.append(repr(e))
            self._fail(500, "InternalError", repr(e))

    def _forward(self):
        srv = self.server.s3
        with srv.lock:
            srv.started.append((self.command, self.path))
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n > 0 else b""
        if len(body) < n:       # the sender went away (a killed agent)
            with srv.lock:
                srv.refused.append("a body cut short")
            self.close_connection = True
            return
        why = self._signature_ok(body)
        if why is not None:
            srv.refused.append(why)
            return self._fail(403, "SignatureDoesNotMatch", why)
        claimed = self.headers.get("x-amz-content-sha256", "")
        if self.command in ("PUT", "POST") and \
                claimed != hashlib.sha256(body).hexdigest():
            srv.refused.append("payload sha256 mismatch")
            return self._fail(400, "XAmzContentSHA256Mismatch",
                              "the body's sha256 is not the header's")
        if self.command == "PUT":
            with srv.lock:
                fp = srv.fail_part
                if fp is not None and self.path.startswith(fp[0] + "?") and \
                        ("partNumber=%d&" % fp[1]) in self.path:
                    srv.fail_part = None
                    srv.refused.append("told to fail a part")
                    return self._fail(500, "InternalError", "We "
                                      "encountered an internal error.")
            fault = srv.faults.get(self.path)
            if fault == "deny":
                with srv.lock:
                    srv.refused.append("told to deny")
                return self._fail(403, "AccessDenied", "Access Denied")
            if fault == "hang":
                with srv.lock:
                    srv.refused.append("told to hang")
                srv.stopping.wait(600)
                self.close_connection = True
                return
            with srv.lock:
                if srv.refuse_puts > 0:
                    srv.refuse_puts -= 1
                    srv.refused.append("told to refuse")
                    return self._fail(503, "SlowDown", "Please reduce your "
                                      "request rate.")
        conn = http.client.HTTPConnection("127.0.0.1", srv.backend_port,
                                          timeout=60)
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in ("connection", "expect")}
        conn.request(self.command, self.path, body=body if n > 0 else None,
                     headers=hdrs)
        r = conn.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding",
                                 "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()
        with srv.lock:
            srv.answers.append((self.command, self.path, r.status))
        if self.command == "PUT" and r.status == 200:
            with srv.lock:
                srv.puts.append((self.path, len(body)))

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _handle


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


class S3:
    """s3rver on a port of its own, with bucket `bucket`, behind the
    verifying proxy (self.endpoint).  Objects are files under self.data."""

    def __init__(self, dirpath, bucket):
        self.dir = dirpath
        self.bucket = bucket
        self.data = os.path.join(dirpath, "s3data")
        self.lock = threading.Lock()
        self.refuse_puts = 0
        self.faults = {}        # path: "deny" or "hang", every PUT of it
        self.fail_part = None   # (path, part number): refused once
        self.stopping = threading.Event()   # ends the hung requests
        self.refused = []
        self.errors = []        # the proxy's own failures
        self.started = []       # (method, path) as each request came
        self.puts = []          # (path, bytes) that s3rver stored
        self.answers = []       # (method, path, status) s3rver answered
        self.proc = None
        self.httpd = None

    def start(self):
        cmd = npm_install()
        os.makedirs(self.data, exist_ok=True)
        self.proc = Proc("s3rver", ["node", cmd, "-d", self.data, "-a",
                                    "127.0.0.1", "-p", "0",
                                    "--configure-bucket", self.bucket],
                         os.path.join(self.dir, "s3rver.log"))
        self.proc.start()

        def port():
            if not self.proc.alive():
                raise Failure("s3rver exited:\n%s" % self.proc.output())
            m = re.findall(r"listening on [0-9.]+:(\d+)", self.proc.output())
            return int(m[-1]) if m else None
        self.backend_port = wait_for(port, 60, "s3rver listening")
        self.httpd = _Server(("127.0.0.1", 0), Verifier)
        self.httpd.s3 = self
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.endpoint = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        return self

    def upload_flags(self, prefix, *more, endpoint=None):
        """An agent's flags to upload its packed traces to
        s3://BUCKET/prefix through endpoint (the proxy unless told), then
        more."""
        return ["--trace-upload", "s3://%s/%s" % (self.bucket, prefix),
                "--s3-endpoint", endpoint or self.endpoint] + list(more)

    def agent_flags(self, store, prefix, *more, endpoint=None):
        """An agent's flags to pack its ranks' traces into store and upload
        them (upload_flags())."""
        return ["--trace-store", store, "--trace-settle", "1"] + \
            self.upload_flags(prefix, *more, endpoint=endpoint)

    def start_uploading(self, c, prefix, *more, coordinator=()):
        """Cluster c's coordinator (with the flags coordinator) and node n0
        with an agent packing its ranks' traces into a new store and
        uploading them (upload_flags()); returns the node, the store and
        the agent's flags (to start it again)."""
        return c.start_collecting(1, self.upload_flags(prefix, *more),
                                  coordinator=coordinator)

    def object_path(self, key):
        """The file s3rver keeps an object's bytes in."""
        return os.path.join(self.data, self.bucket, key + "._S3rver_object")

    def check_objects(self, idx, staged, key):
        """Each trace of a traces index idx: its location s3://BUCKET/KEY
        (key % rank), the object's bytes those of the archive staged in
        directory staged, with the index's size and sha256."""
        for t in idx["traces"]:
            r = t["rank"]
            check(t["location"] == "s3://%s/%s" % (self.bucket, key % r),
                  "rank %d location %s" % (r, t["location"]))
            data = open(self.object_path(key % r), "rb").read()
            local = open(os.path.join(staged, "rank-%d.tar.zst" % r),
                         "rb").read()
            check(hashlib.sha256(data).hexdigest() == t["sha256"] and
                  len(data) == t["size"] and data == local,
                  "rank %d: the object differs from what was reported" % r)

    def stop(self):
        self.stopping.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        if self.proc is not None:
            self.proc.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def use_credentials():
    """Gives this process (and the agents and dynprofctl it starts) the
    server's credentials."""
    os.environ.update({k: v for k, v in env().items()
                       if k.startswith("AWS_")})


def env():
    """The agent's and dynprofctl's credentials for the server."""
    e = dict(os.environ)
    e["AWS_ACCESS_KEY_ID"] = ACCESS_KEY
    e["AWS_SECRET_ACCESS_KEY"] = SECRET_KEY
    return e

