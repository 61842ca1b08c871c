"""Real etcd members on loopback for the tests, each in its own temporary data
directory, on free ports picked at start: 1 member for the store's tests, 3 where
losing one (or two, the quorum) matters.

As a module: EtcdCluster(n).start(), .endpoints (a comma-separated list as
--etcd-endpoints takes it), .stop_member(i) / .start_member(i), .close().
EtcdCluster(n, tls=DIR, client=NAME) serves https only to clients with a
certificate of DIR/ca.crt, itself showing DIR/etcd.crt and DIR/etcd.key
(etcd's gateway shows it as a client certificate too: it needs both server
and client authentication in its extended key usage); /health is asked with
DIR/NAME.crt.  make_server_cert(DIR) makes etcd.crt with the CA that
deploy/tls/mkcerts.sh -o DIR made.

As a command, it wraps a test so that `make test` starts and stops etcd itself:

    etcd.py [--members N] [--max-txn-ops N] -- COMMAND [ARGS...]

runs COMMAND with DYNPROF_ETCD_ENDPOINTS set (and DYNPROF_ETCD_PIDS, the
members' pids, comma-separated, for benchmarks that read their CPU) and exits with its status (1
when etcd is not installed: scripts/deps.sh installs etcd-server with the
"test" set, which make test installs).  Standard library only.
"""

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

ETCD = "/usr/bin/etcd"
START_TIMEOUT = 30      # seconds for every member to answer /health


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (free when asked)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def make_server_cert(d):
    """DIR/etcd.crt and .key for 127.0.0.1, server and client auth, signed by
    DIR/ca.crt and DIR/ca.key."""
    ext = os.path.join(d, "etcd.ext")
    with open(ext, "w") as f:
        f.write("extendedKeyUsage = serverAuth, clientAuth\n"
                "subjectAltName = IP:127.0.0.1\n")
    key, csr = os.path.join(d, "etcd.key"), os.path.join(d, "etcd.csr")
    for argv in (["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                  "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                  "-subj", "/CN=etcd", "-out", csr],
                 ["openssl", "x509", "-req", "-in", csr, "-CA",
                  os.path.join(d, "ca.crt"), "-CAkey", os.path.join(d, "ca.key"),
                  "-CAcreateserial", "-days", "1", "-extfile", ext, "-out",
                  os.path.join(d, "etcd.crt")]):
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


class EtcdCluster:
    def __init__(self, members=1, name="dynprof", tls=None, client=None,
                 max_txn_ops=None):
        self.n = members
        self.max_txn_ops = max_txn_ops  # etcd's --max-txn-ops, None: 128
        self.tls = tls          # DIR of mkcerts.sh, or None: http
        self.client = client    # NAME of the client certificate /health uses
        self.dir = tempfile.mkdtemp(prefix="dynprof-etcd-%s-" % name)
        ports = free_ports(2 * members)
        self.ports = ports[:members]
        self.peer = ports[members:]
        self.procs = [None] * members
        self.cluster = ",".join("m%d=http://127.0.0.1:%d" % (i, self.peer[i])
                                for i in range(members))

    @property
    def endpoints(self):
        return ",".join(self.urls())

    def urls(self):
        scheme = "https" if self.tls else "http"
        return ["%s://127.0.0.1:%d" % (scheme, p) for p in self.ports]

    def start_member(self, i):
        log = open(os.path.join(self.dir, "m%d.log" % i), "ab")
        argv = [ETCD, "--name", "m%d" % i,
                "--data-dir", os.path.join(self.dir, "m%d" % i),
                "--listen-client-urls", self.urls()[i],
                "--advertise-client-urls", self.urls()[i],
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:%d" % self.peer[i],
                "--initial-cluster", self.cluster,
                "--initial-cluster-token", os.path.basename(self.dir),
                # Elections in a fraction of a second, not seconds: the
                # tests lose members on purpose.
                "--heartbeat-interval", "50", "--election-timeout", "500",
                "--log-level", "warn"]
        if self.max_txn_ops:
            argv += ["--max-txn-ops", str(self.max_txn_ops)]
        if self.tls:
            argv += ["--cert-file", os.path.join(self.tls, "etcd.crt"),
                     "--key-file", os.path.join(self.tls, "etcd.key"),
                     "--trusted-ca-file", os.path.join(self.tls, "ca.crt"),
                     "--client-cert-auth"]
        self.procs[i] = subprocess.Popen(argv, stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        log.close()

    def stop_member(self, i, sig=signal.SIGKILL):
        p = self.procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(sig)
            p.wait(10)
        self.procs[i] = None

    def healthy(self, i):
        ctx = None
        if self.tls:
            ctx = ssl.create_default_context(
                cafile=os.path.join(self.tls, "ca.crt"))
            ctx.load_cert_chain(os.path.join(self.tls, self.client + ".crt"),
                                os.path.join(self.tls, self.client + ".key"))
        try:
            with urllib.request.urlopen(self.urls()[i] + "/health",
                                        timeout=2, context=ctx) as r:
                return b'"true"' in r.read()
        except OSError:
            return False

    def keys(self, prefix, i=0):
        """The keys under prefix, as member i has them (a linearizable read
        through etcd's JSON gateway, plain http only): what is committed,
        whatever a client of etcd says of it."""
        def b64(s):
            return base64.b64encode(s.encode()).decode()
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        req = urllib.request.Request(
            self.urls()[i] + "/v3/kv/range",
            json.dumps({"key": b64(prefix), "range_end": b64(end),
                        "keys_only": True}).encode(),
            {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            body = json.load(r)
        return sorted(base64.b64decode(kv["key"]).decode()
                      for kv in body.get("kvs", []))

    def wait_healthy(self, members=None, timeout=START_TIMEOUT):
        members = range(self.n) if members is None else members
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i in members:
                p = self.procs[i]
                if p is not None and p.poll() is not None:
                    raise RuntimeError("etcd m%d exited %s:\n%s" % (
                        i, p.returncode, self.log(i)))
            if all(self.healthy(i) for i in members):
                return
            time.sleep(0.1)
        raise RuntimeError("etcd not healthy after %ds:\n%s" % (
            timeout, "\n".join(self.log(i) for i in members)))

    def start(self):
        for i in range(self.n):
            self.start_member(i)
        self.wait_healthy()
        return self

    def log(self, i):
        try:
            with open(os.path.join(self.dir, "m%d.log" % i), "r",
                      errors="replace") as f:
                return "".join(f.readlines()[-20:])
        except OSError:
            return ""

    def close(self):
        for i in range(self.n):
            try:
                self.stop_member(i)
            except Exception:  # keep cleaning up
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False


def for_cluster(c, name):
    """A one-member etcd started for a tests/support/cluster.py Cluster c
    (closed with it): (the etcd, the coordinator's flags for it under a
    prefix of this process), or None when etcd is not installed (said)."""
    if not os.access(ETCD, os.X_OK):
        print("FAIL: %s is not installed" % ETCD)
        return None
    cl = EtcdCluster(1, name=name)
    c.cleanups.append(cl.close)
    cl.start()
    prefix = "/dynprof-%s-%d/" % (name, os.getpid())
    return cl, ["--etcd-endpoints", cl.endpoints, "--etcd-prefix", prefix,
                "--etcd-lease-ttl", "2"]


def main(argv):
    members, ops = 1, None
    while argv[:1] in (["--members"], ["--max-txn-ops"]):
        if argv[0] == "--members":
            members = int(argv[1])
        else:
            ops = int(argv[1])
        argv = argv[2:]
    if argv[:1] != ["--"] or len(argv) < 2:
        sys.stderr.write("usage: etcd.py [--members N] [--max-txn-ops N] -- "
                         "COMMAND [ARGS...]\n")
        return 2
    if not os.access(ETCD, os.X_OK):
        # make test installs it: missing is a failure, never a pass.
        print("FAIL: %s is not installed (make deps-test, or scripts/deps.sh: "
              "etcd-server)" % ETCD)
        return 1
    with EtcdCluster(members, name="ctest", max_txn_ops=ops) as c:
        env = dict(os.environ)
        env["DYNPROF_ETCD_ENDPOINTS"] = c.endpoints
        env["DYNPROF_ETCD_PIDS"] = ",".join(str(p.pid) for p in c.procs)
        return subprocess.call(argv[1:], env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
