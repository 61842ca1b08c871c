#!/usr/bin/python3
"""AgentLink over mutual TLS and the admin API over HTTPS, with the real
coordinator and agents on 127.0.0.1 and certificates made here by
deploy/tls/mkcerts.sh (and `openssl ca` for an expired one):

- good certificates: a window is applied and its events acknowledged end to end
- a certificate for another node than the hello claims: refused with a reason
- a certificate of another CA: refused, logged, the agent retries with backoff
- an expired certificate: refused, logged
- a plaintext agent on the TLS port, a TLS agent on a plaintext port: both
  closed at once with a log line on each side; a silent peer on the TLS port
  closed at the handshake deadline
- SIGHUP mid-stream: the live link stays, new connections get the new
  certificate; a broken file keeps the old one and says why
- HTTPS admin API with and without a required client certificate (curl)
- a non-loopback address without TLS is refused at start unless --insecure
- session resumption: after a coordinator restart an agent's reconnect resumes
  its session (the ticket keys kept in the state directory, 0600) and a window
  still runs; without the keys file it is a full handshake again
- a FIFO at a configured path never blocks a daemon: the ticket keys or a
  token file at start (refused, saying why), the coordinator's CA or key and
  the agent's, and the agent's --conf, on SIGHUP (the loaded ones kept:
  /healthz answers and a window posted meanwhile reaches its ranks)
- 2,000 handshakes stalled after the ClientHello: all closed at the deadline,
  and the coordinator's memory goes back (within 40 MB of what it was)
"""

import os
import re
import resource
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (COORDINATOR, AGENT, Cluster, Failure, Proc, binary,  # noqa: E402
                     check, log, main, wait_for)

JOB = "tls-%d" % os.getpid()
SRC = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "..", ".."))
MKCERTS = os.path.join(SRC, "deploy", "tls", "mkcerts.sh")


def run(argv, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60, **kw)
    if r.returncode != 0:
        raise Failure("%s: exit %d:\n%s" % (" ".join(argv), r.returncode, r.stdout))
    return r.stdout


def make_certs(d):
    """d/good: the cluster CA, the coordinator's and nodes' certificates;
    d/other: another CA with a certificate for n2; d/good/n3x: an expired
    certificate for n3 signed by the good CA."""
    good, other = os.path.join(d, "good"), os.path.join(d, "other")
    run(["sh", MKCERTS, "-o", good, "-c", "localhost", "-c", "127.0.0.1",
         "n0", "n1", "n4", "impostor", "operator"])
    run(["sh", MKCERTS, "-o", other, "n2"])
    # Expired: openssl 3.0's x509 -req has no start date; `openssl ca` does.
    ca = os.path.join(d, "ca-db")
    os.makedirs(os.path.join(ca, "new"))
    open(os.path.join(ca, "index.txt"), "w").close()
    with open(os.path.join(ca, "serial"), "w") as f:
        f.write("1000\n")
    cfg = os.path.join(ca, "ca.cnf")
    with open(cfg, "w") as f:
        f.write("""[ ca ]
default_ca = dflt
[ dflt ]
database = %(ca)s/index.txt
new_certs_dir = %(ca)s/new
serial = %(ca)s/serial
default_md = sha256
policy = any
x509_extensions = ext
unique_subject = no
[ any ]
commonName = supplied
[ ext ]
basicConstraints = critical, CA:FALSE
extendedKeyUsage = clientAuth
subjectAltName = DNS:n3
""" % {"ca": ca})
    run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         os.path.join(good, "n3x.key"), "-subj", "/CN=n3", "-out",
         os.path.join(ca, "n3.csr")])
    run(["openssl", "ca", "-batch", "-config", cfg, "-notext",
         "-cert", os.path.join(good, "ca.crt"), "-keyfile",
         os.path.join(good, "ca.key"), "-in", os.path.join(ca, "n3.csr"),
         "-out", os.path.join(good, "n3x.crt"),
         "-startdate", "20200101000000Z", "-enddate", "20200102000000Z"])
    return good, other


def agent_tls(dirname, name, ca=None):
    return ["--tls-cert", os.path.join(dirname, name + ".crt"),
            "--tls-key", os.path.join(dirname, name + ".key"),
            "--tls-ca", ca or os.path.join(dirname, "ca.crt")]


# How far ahead a window starts: 5 s of the ranks' 50 steps a second, so that
# the window reaches the agent before the ranks reach it on a loaded machine
# (0.4 s was not: a rank past the start skips the window).
AHEAD = 250


def coord_tls(good):
    return ["--tls-cert", os.path.join(good, "coordinator.crt"),
            "--tls-key", os.path.join(good, "coordinator.key"),
            "--tls-ca", os.path.join(good, "ca.crt")]


def wait_log(proc, pattern, timeout, what):
    """Until proc's output matches pattern; returns the match."""
    rx = re.compile(pattern)
    return wait_for(lambda: rx.search(proc.output()), timeout, what)


def nodes(c):
    code, body = c.http("GET", "/v1/nodes")
    check(code == 200, "GET /v1/nodes: %s %s" % (code, body))
    return {n["node"]: n for n in body["nodes"]}


def metric(c, name):
    with urllib.request.urlopen(c.url() + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r"^%s (-?\d+)$" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else None


def served_cert(port, good, client="n0"):
    """The DER certificate a new TLS connection to port is given."""
    ctx = ssl.create_default_context(cafile=os.path.join(good, "ca.crt"))
    ctx.load_cert_chain(os.path.join(good, client + ".crt"),
                        os.path.join(good, client + ".key"))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return t.getpeercert(binary_form=True)


def der_of(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def failures(proc):
    return [l for l in proc.output().splitlines() if "failed" in l and
            "connection to coordinator" in l]


def start_plain_coordinator(c, name, extra=()):
    """A second coordinator under c's directory; returns (proc, agent_port,
    http_port)."""
    d = os.path.join(c.dir, name)
    os.makedirs(os.path.join(d, "state"))
    ready = os.path.join(d, "ready")
    p = Proc(name, [binary(COORDINATOR), "--listen", "127.0.0.1:0", "--http",
                    "127.0.0.1:0", "--state-dir", os.path.join(d, "state"),
                    "--heartbeat-ms", "500", "--ready-file", ready] + list(extra),
             os.path.join(d, "log"))
    c.procs.append(p.start())

    def ports():
        if not p.alive():
            raise Failure("%s exited %s:\n%s" % (name, p.p.returncode, p.output()))
        if not os.path.exists(ready):
            return None
        kv = dict(l.strip().split("=", 1) for l in open(ready) if "=" in l)
        return kv if "http_port" in kv else None
    kv = wait_for(ports, 20, name + " ready")
    return p, int(kv["agent_port"]), int(kv["http_port"])


def curl(url, *args):
    r = subprocess.run(["curl", "-sS", "--max-time", "5", "-o", "/dev/null",
                        "-w", "%{http_code}", url] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def refused(c, name, tls, coord_says, agent_says):
    """Starts node name's agent with tls; the coordinator and the agent must
    log why it is refused, and it must never be connected.  Returns the node."""
    n = c.node(name)
    n.start_agent(tls)
    wait_log(c.coord, coord_says, 10, "coordinator refusing %s" % name)
    wait_log(n.agent, agent_says, 10, "agent %s told why" % name)
    check(nodes(c).get(name, {}).get("state") != "connected",
          "%s connected with %s" % (name, tls))
    return n


def test_link(c, good, other):
    c.start_coordinator(extra=coord_tls(good))
    check(metric(c, 'dynprof_tls_cert_expiry_seconds{role="agentlink"}') >
          300 * 86400, "no agentlink certificate expiry gauge")

    log("good certificate: n0 connects, a window runs end to end")
    n0 = c.node("n0")
    conf = os.path.join(n0.dir, "agent.conf")
    with open(conf, "w") as f:      # the agent's --conf takes the same keys
        t = agent_tls(good, "n0")
        f.write("tls-cert = %s\ntls-key = %s\ntls-ca = %s\n" % (t[1], t[3], t[5]))
    n0.start_agent(["--conf", conf])
    for rank in (0, 1):
        n0.start_rank(JOB, rank, rate=50)
    c.wait_ranks(JOB, 2, min_step=5)
    w = c.add_window(JOB, {"in_steps": AHEAD, "steps": 20})
    c.wait_window_done(JOB, w["id"], [0, 1], timeout=60)
    wait_for(lambda: nodes(c)["n0"]["jobs"].get(JOB, 0) >= w["generation"],
             10, "n0 applied generation %d" % w["generation"])
    since = nodes(c)["n0"]["connected_since"]

    log("a certificate naming another node than the hello")
    n1 = refused(c, "n1", agent_tls(good, "impostor"),
                 r"claims node n1: the client certificate \(CN impostor\) "
                 r"does not name node n1", r"refused: .*does not name node n1")

    log("a certificate of another CA: refused, retried with backoff")
    n2 = refused(c, "n2", agent_tls(other, "n2", ca=os.path.join(good, "ca.crt")),
                 r"TLS handshake with 127\.0\.0\.1:\d+ failed: .*peer "
                 r"certificate: unable to get local issuer certificate",
                 r"TLS (handshake failed|error): ")
    wait_for(lambda: len(failures(n2.agent)) >= 5, 20, "5 attempts of n2")
    stamps = []
    for l in failures(n2.agent)[:5]:
        m = re.match(r"\S+T(\d+):(\d+):([\d.]+)Z", l)
        stamps.append(int(m.group(1)) * 3600 + int(m.group(2)) * 60 +
                      float(m.group(3)))
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    check(gaps[3] > gaps[0] and gaps[3] >= 0.35,
          "n2 retries without backoff: gaps %s" % gaps)

    log("an expired certificate")
    n3 = refused(c, "n3", agent_tls(good, "n3x"),
                 r"TLS handshake with .* failed: .*peer certificate: "
                 r"certificate has expired",
                 r"TLS (handshake failed|error): |certificate refused")

    # Refused at once, not at the handshake deadline: the reason logged is
    # the plaintext record itself (a deadline would say "not done in time").
    log("a plaintext agent on the TLS port")
    n4 = c.node("n4")
    n4.start_agent()
    wait_log(n4.agent, r"does the coordinator require TLS", 30,
             "plaintext agent told why")
    wait_log(c.coord, r"TLS handshake with 127\.0\.0\.1:\d+ failed: "
             r"a plaintext peer on the TLS port: its first bytes are no "
             r"TLS record \(", 30, "coordinator closing the plaintext agent")
    check("n4" not in nodes(c), "a plaintext agent got in")

    # Closed by the handshake deadline (3 heartbeats, 1.5 s here): never
    # before it, and the reason logged is the deadline's.  Only a generous
    # bound above, which a loaded machine does not reach.  Below, the
    # deadline less 50 ms: libevent times with CLOCK_MONOTONIC_COARSE, one
    # kernel tick (up to 10 ms) behind, and a close at once takes
    # milliseconds, so the bound still tells the deadline from no deadline.
    log("a silent peer on the TLS port: closed at the handshake deadline")
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", c.agent_port), timeout=30) as s:
        try:
            data = s.recv(1)
        except ConnectionResetError:
            data = b""
    took = time.monotonic() - t0
    check(data == b"" and took >= 1.45,
          "silent peer: got %r after %.1f s" % (data, took))
    wait_log(c.coord, r"TLS handshake with 127\.0\.0\.1:\d+ failed: not done "
             r"in time|closing 127\.0\.0\.1:\d+: no hello in time", 30,
             "the silent peer's close logged")
    for n in (n1, n2, n3, n4):
        n.agent.stop()

    log("a TLS agent on a plaintext port")
    plain, pport, _ = start_plain_coordinator(c, "plain")
    n5 = c.node("n5", coord_addr="127.0.0.1:%d" % pport)
    n5.start_agent(agent_tls(good, "n4"))
    # At once: the plaintext coordinator recognises the ClientHello.
    wait_log(plain, r"speaks TLS on this plaintext AgentLink port", 30,
             "plaintext coordinator seeing TLS")
    wait_log(n5.agent, r"TLS handshake failed: ", 30, "TLS agent told why")
    n5.agent.stop()
    plain.stop()

    log("SIGHUP with a new coordinator certificate, n0 connected")
    old = der_of(os.path.join(good, "coordinator.crt"))
    check(served_cert(c.agent_port, good) == old, "not the first certificate")
    run(["sh", MKCERTS, "-o", good, "-k", "-c", "localhost", "-c", "127.0.0.1"])
    new = der_of(os.path.join(good, "coordinator.crt"))
    check(new != old, "mkcerts -k made the same certificate")
    c.coord.signal(signal.SIGHUP)
    wait_log(c.coord, r"agentlink: reloaded certificate", 5, "reload")
    check(served_cert(c.agent_port, good) == new,
          "a new connection after SIGHUP is not given the new certificate")
    n0.agent.signal(signal.SIGHUP)
    wait_log(n0.agent, r"agentlink: reloaded certificate", 5, "agent reload")
    w2 = c.add_window(JOB, {"in_steps": AHEAD, "steps": 20})
    c.wait_window_done(JOB, w2["id"], [0, 1], timeout=60)

    log("SIGHUP with a broken certificate file keeps the loaded one")
    with open(os.path.join(good, "coordinator.crt"), "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64\n")
    c.coord.signal(signal.SIGHUP)
    wait_log(c.coord, r"agentlink: keeping the certificate in use: "
             r"certificate .*coordinator\.crt: ", 5, "reload refused")
    check(served_cert(c.agent_port, good) == new,
          "a broken file replaced the certificate in use")
    check(nodes(c)["n0"]["state"] == "connected" and
          nodes(c)["n0"]["connected_since"] == since,
          "n0's link did not survive the reloads: %s" % nodes(c)["n0"])
    check(c.coord.alive(), "coordinator died on a broken certificate")
    check("closing 127.0.0.1" not in "".join(
        l for l in c.coord.output().splitlines() if "node n0" in l),
        "n0 was closed")


def test_https(c, good):
    log("HTTPS admin API requiring a client certificate")
    p, _, hport = start_plain_coordinator(c, "https", [
        "--http-tls-cert", os.path.join(good, "coordinator.crt"),
        "--http-tls-key", os.path.join(good, "coordinator.key"),
        "--http-tls-ca", os.path.join(good, "ca.crt")])
    url = "https://127.0.0.1:%d/healthz" % hport
    ca = ["--cacert", os.path.join(good, "ca.crt")]
    rc, code, err = curl(url, *ca)
    check(rc != 0 and code != "200",
          "no client certificate, yet served: rc %d code %s" % (rc, code))
    rc, code, err = curl(url, *ca, "--cert", os.path.join(good, "operator.crt"),
                         "--key", os.path.join(good, "operator.key"))
    check(rc == 0 and code == "200", "with a client certificate: rc %d %s %s" %
          (rc, code, err))
    rc, code, err = curl(url, *ca, "--cert", os.path.join(good, "..", "other",
                                                          "n2.crt"),
                         "--key", os.path.join(good, "..", "other", "n2.key"))
    check(rc != 0 and code != "200",
          "a client certificate of another CA, yet served: rc %d %s" % (rc, code))
    client = ["--cert", os.path.join(good, "operator.crt"), "--key",
              os.path.join(good, "operator.key")]
    r = subprocess.run(["curl", "-sS", "--max-time", "5",
                        "https://localhost:%d/metrics" % hport] + ca + client,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    m = re.search(r'^dynprof_tls_cert_expiry_seconds\{role="http"\} (\d+)$',
                  r.stdout, re.M)
    check(r.returncode == 0 and m and int(m.group(1)) > 300 * 86400,
          "no http certificate expiry over HTTPS: %s %s" % (r.stderr, r.stdout[-300:]))
    p.signal(signal.SIGHUP)
    wait_log(p, r"http: reloaded certificate", 5, "HTTPS certificate reload")
    rc, code, err = curl(url, *ca, *client)
    check(rc == 0 and code == "200", "HTTPS after SIGHUP: rc %d %s" % (rc, err))
    # Refused, not left to time out (curl's exit 28 at its --max-time).
    rc, code, err = curl("http://127.0.0.1:%d/healthz" % hport)
    check(rc not in (0, 28),
          "plain HTTP on the HTTPS port: rc %d code %s %s" % (rc, code, err))
    p.stop()

    log("HTTPS admin API without client certificates")
    p, _, hport = start_plain_coordinator(c, "https2", [
        "--http-tls-cert", os.path.join(good, "coordinator.crt"),
        "--http-tls-key", os.path.join(good, "coordinator.key")])
    rc, code, err = curl("https://127.0.0.1:%d/healthz" % hport, *ca)
    check(rc == 0 and code == "200", "HTTPS without client certificates: "
          "rc %d %s %s" % (rc, code, err))
    rc, code, err = curl("https://127.0.0.1:%d/healthz" % hport)
    check(rc != 0, "curl trusted the certificate without the CA")
    p.stop()


def start_exit(c, name, args, timeout=10, state=None):
    """Runs the coordinator with args (and state, else a new state
    directory); returns (exit code or None if it is serving, its output)."""
    d = os.path.join(c.dir, name)
    os.makedirs(os.path.join(d, "state"))
    ready = os.path.join(d, "ready")
    p = subprocess.Popen([binary(COORDINATOR), "--state-dir",
                          state or os.path.join(d, "state"), "--ready-file",
                          ready] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            return p.returncode, p.stdout.read()
        if os.path.exists(ready):
            p.send_signal(signal.SIGTERM)
            out = p.communicate(timeout=10)[0]
            check(p.returncode == 0, "%s: exit %s on SIGTERM" % (name, p.returncode))
            return None, out
        time.sleep(0.05)
    p.kill()
    p.communicate()
    raise Failure("%s: neither served nor exited" % name)


def test_exposure(c, good):
    log("non-loopback addresses need TLS unless --insecure")
    tok = os.path.join(c.dir, "tok")
    with open(tok, "w") as f:
        f.write("t0k\n")
    http_tls = ["--http-tls-cert", os.path.join(good, "coordinator.crt"),
                "--http-tls-key", os.path.join(good, "coordinator.key")]
    cases = [
        ("plain-listen", ["--listen", "0.0.0.0:0", "--http", "127.0.0.1:0",
                          "--agent-token-file", tok], 1,
         r"--listen 0\.0\.0\.0:0 is not a loopback address: give --tls-cert"),
        ("plain-http", ["--listen", "127.0.0.1:0", "--http", "0.0.0.0:0",
                        "--admin-token-file", tok], 1,
         r"--http 0\.0\.0\.0:0 is not a loopback address: give --http-tls-cert"),
        ("https-no-auth", ["--listen", "127.0.0.1:0", "--http", "0.0.0.0:0"] +
         http_tls, 1, r"--admin-token-file or --http-tls-ca"),
        ("half-tls", ["--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                      "--tls-cert", os.path.join(good, "coordinator.crt")], 1,
         r"--tls-cert, --tls-key and --tls-ca go together"),
        ("bad-key", ["--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                     "--tls-cert", os.path.join(good, "n0.crt"),
                     "--tls-key", os.path.join(good, "n1.key"),
                     "--tls-ca", os.path.join(good, "ca.crt")], 2,
         r"key .*n1\.key: key values mismatch"),
        ("tls-listen", ["--listen", "0.0.0.0:0", "--http", "127.0.0.1:0"] +
         coord_tls(good), None, r"mutual TLS"),
        ("https-token", ["--listen", "127.0.0.1:0", "--http", "0.0.0.0:0",
                         "--admin-token-file", tok] + http_tls, None, r"HTTPS"),
        ("insecure", ["--listen", "0.0.0.0:0", "--http", "0.0.0.0:0",
                      "--insecure"], None, r"--insecure: serving a non-loopback"),
    ]
    for name, args, want, pattern in cases:
        rc, out = start_exit(c, name, args)
        check(rc == want, "%s: exit %s, want %s:\n%s" % (name, rc, want, out))
        check(re.search(pattern, out), "%s: no /%s/ in:\n%s" % (name, pattern, out))
        log("%s: %s" % (name, "serves" if rc is None else "exit %d" % rc))


def window_after_restart(c):
    """A window AHEAD steps ahead, once a restarted coordinator has heard the
    ranks' steps again (until then it answers 409)."""
    def post():
        code, w = c.http("POST", "/v1/jobs/%s/windows" % JOB,
                         {"in_steps": AHEAD, "steps": 20})
        return w if code == 201 else None
    return wait_for(post, 20, "a window accepted after the restart",
                    interval=0.2)


def reconnected(c, agent_says, what, resumed):
    """After a coordinator restart: once agent_says(), n0 is connected, the
    coordinator counts one handshake (resumed or not), and a window runs."""
    wait_for(agent_says, 20, what)
    wait_for(lambda: nodes(c).get("n0", {}).get("state") == "connected", 10,
             "n0 connected again")
    hs = metric(c, 'dynprof_tls_handshakes_total{role="agentlink"}')
    res = metric(c, 'dynprof_tls_resumed_total{role="agentlink"}')
    check(hs == 1 and res == resumed, "%s: %s handshakes, %s resumed" % (
        what, hs, res))
    c.wait_window_done(JOB, window_after_restart(c)["id"], [0], timeout=60)


def test_resumption(c, good):
    """A fresh cluster: the coordinator restarts twice, once keeping its state
    directory's ticket keys and once without them."""
    c.start_coordinator(extra=coord_tls(good))
    keys = os.path.join(c.state, "tls-ticket-keys")
    st = os.stat(keys)
    check(st.st_size == 80 and st.st_mode & 0o777 == 0o600,
          "ticket keys: %d bytes, mode %o" % (st.st_size, st.st_mode & 0o777))
    wait_log(c.coord, r"agentlink: session tickets resume across restarts: "
             r"keys made in", 5, "keys made")
    hs = 'dynprof_tls_handshakes_total{role="agentlink"}'
    res = 'dynprof_tls_resumed_total{role="agentlink"}'
    check(metric(c, hs) == 0 and metric(c, res) == 0, "counters not at 0")
    n0 = c.node("n0")
    n0.start_agent(agent_tls(good, "n0"))
    wait_log(n0.agent, r"TLSv1\.3, full handshake", 10, "first handshake")
    wait_for(lambda: nodes(c).get("n0", {}).get("state") == "connected", 10,
             "n0 connected")
    check(metric(c, hs) == 1 and metric(c, res) == 0,
          "first connection: %s handshakes, %s resumed" % (metric(c, hs),
                                                           metric(c, res)))
    n0.start_rank(JOB, 0, rate=50)
    c.wait_ranks(JOB, 1, min_step=5)

    log("coordinator restart with its ticket keys: the agent resumes")
    c.coord.stop()
    c.start_coordinator(extra=coord_tls(good))
    wait_log(c.coord, r"keys read from", 5, "keys read")
    check(os.stat(keys).st_ino == st.st_ino, "the keys file was replaced")
    reconnected(c, lambda: "TLSv1.3, session resumed" in n0.agent.output(),
                "a resumed reconnect", 1)

    log("coordinator restart without its ticket keys: a full handshake")
    c.coord.stop()
    os.unlink(keys)
    c.start_coordinator(extra=coord_tls(good))
    wait_log(c.coord, r"keys made in", 5, "new keys made")
    reconnected(c, lambda: n0.agent.output().count("full handshake") >= 2,
                "a full handshake after losing the keys", 0)

    log("a keys file others may read stops the coordinator at start")
    c.coord.stop()
    os.chmod(keys, 0o644)
    rc, out = start_exit(c, "loose-keys", ["--listen", "127.0.0.1:0", "--http",
                                           "127.0.0.1:0"] + coord_tls(good),
                         state=c.state)
    check(rc == 2 and "mode 0600" in out,
          "a loose keys file: exit %s:\n%s" % (rc, out))


def swap_fifo(path):
    """Puts a FIFO at path (no writer ever opens it); returns a function
    that puts the file back."""
    os.rename(path, path + ".real")
    os.mkfifo(path, 0o600)

    def restore():
        os.unlink(path)
        os.rename(path + ".real", path)
    return restore


def healthz_in(c, seconds):
    """Checks that /healthz answers within seconds."""
    t0 = time.monotonic()
    code, _ = c.http("GET", "/healthz", timeout=seconds)
    took = time.monotonic() - t0
    check(code == 200 and took < seconds, "/healthz: %s after %.1f s" %
          (code, took))


def test_fifo(c, good):
    log("a FIFO as the ticket keys: the coordinator refuses to start")
    d = os.path.join(c.dir, "fifo-keys")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "tls-ticket-keys"), 0o600)
    rc, out = start_exit(c, "fifo-keys", ["--listen", "127.0.0.1:0", "--http",
                                          "127.0.0.1:0"] + coord_tls(good),
                         state=d)
    check(rc == 2 and re.search(r"tls-ticket-keys: .*not a regular file", out),
          "ticket keys as a FIFO: exit %s:\n%s" % (rc, out))

    log("a FIFO as the agent token file: the coordinator refuses to start")
    tok = os.path.join(c.dir, "agent-token.fifo")
    os.mkfifo(tok, 0o600)
    rc, out = start_exit(c, "fifo-token", ["--listen", "127.0.0.1:0", "--http",
                                           "127.0.0.1:0",
                                           "--agent-token-file", tok])
    check(rc == 1 and re.search(r"agent-token\.fifo: not a regular file", out),
          "token file as a FIFO: exit %s:\n%s" % (rc, out))

    c.start_coordinator(extra=coord_tls(good))
    n0 = c.node("n0")
    conf = os.path.join(n0.dir, "agent.conf")
    with open(conf, "w") as f:
        f.write("verbose = no\n")
    n0.start_agent(agent_tls(good, "n0") + ["--conf", conf])
    for rank in (0, 1):
        n0.start_rank(JOB, rank, rate=50)
    c.wait_ranks(JOB, 2, min_step=5)
    for what, path in (("CA", "ca.crt"), ("key", "coordinator.key")):
        log("SIGHUP with a FIFO as the coordinator's %s" % what)
        restore = swap_fifo(os.path.join(good, path))
        c.coord.signal(signal.SIGHUP)
        wait_log(c.coord, r"agentlink: keeping the certificate in use: "
                 r"%s .*%s: not a regular file" % (what, re.escape(path)), 5,
                 "reload with a FIFO refused")
        healthz_in(c, 2)
        w = c.add_window(JOB, {"in_steps": AHEAD, "steps": 20})
        c.wait_window_done(JOB, w["id"], [0, 1], timeout=60)
        restore()
    for what, path in (("CA", "ca.crt"), ("key", "n0.key")):
        log("SIGHUP with a FIFO as the agent's %s" % what)
        restore = swap_fifo(os.path.join(good, path))
        before = n0.agent.output().count("keeping the certificate in use")
        n0.agent.signal(signal.SIGHUP)
        wait_for(lambda: n0.agent.output().count(
            "keeping the certificate in use") > before, 5,
            "the agent's reload with a FIFO refused")
        check(re.search(r"%s .*%s: not a regular file" % (what,
                        re.escape(path)), n0.agent.output()),
              "the agent does not say the %s is a FIFO" % what)
        w = c.add_window(JOB, {"in_steps": AHEAD, "steps": 20})
        c.wait_window_done(JOB, w["id"], [0, 1], timeout=60)
        restore()
    log("SIGHUP with a FIFO as the agent's --conf")
    restore = swap_fifo(conf)
    n0.agent.signal(signal.SIGHUP)
    wait_log(n0.agent, r"agent\.conf: not a regular file", 5,
             "the agent's reload of a FIFO --conf refused")
    wait_log(n0.agent, r"agent\.conf: keeping the running configuration", 5,
             "the agent keeping its configuration")
    w = c.add_window(JOB, {"in_steps": AHEAD, "steps": 20})
    c.wait_window_done(JOB, w["id"], [0, 1], timeout=60)
    restore()
    check(c.coord.alive() and n0.agent.alive(), "a daemon died on a FIFO")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return 0


def test_stalled_handshakes(c, good):
    log("2,000 handshakes stalled after the ClientHello")
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
    c.start_coordinator(extra=coord_tls(good))
    pid = c.coord.p.pid
    time.sleep(1)
    before = rss_kb(pid)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    socks = []
    try:
        for _ in range(2000):
            s = socket.create_connection(("127.0.0.1", c.agent_port))
            s.setblocking(False)
            t = ctx.wrap_socket(s, do_handshake_on_connect=False)
            try:
                t.do_handshake()    # the ClientHello goes, nothing after
            except ssl.SSLWantReadError:
                pass
            socks.append(t)
        peak = rss_kb(pid)
        wait_for(lambda: len(os.listdir("/proc/%d/fd" % pid)) < 100, 60,
                 "the stalled handshakes closed")
        # The heap is trimmed at the next tick (500 ms here).
        time.sleep(3)
        after = rss_kb(pid)
    finally:
        for t in socks:
            t.close()
    log("coordinator RSS %d kB before, %d kB stalled, %d kB after" % (
        before, peak, after))
    if not os.environ.get("DYNPROF_SANITIZED"):  # ASan's own allocator
        check(after - before < 40 * 1024, "the memory of 2,000 stalled "
              "handshakes stays: %d kB before, %d kB after" % (before, after))
    healthz_in(c, 2)
    c.coord.stop()


def test():
    for tool in ("openssl", "curl"):
        if subprocess.run(["sh", "-c", "command -v " + tool],
                          stdout=subprocess.DEVNULL).returncode != 0:
            raise Failure("%s is not installed" % tool)
    binary(AGENT)
    with Cluster("tls") as c:
        good, other = make_certs(os.path.join(c.dir, "certs"))
        test_exposure(c, good)
        test_https(c, good)
        test_link(c, good, other)
    with Cluster("tls-resume") as c:
        good = os.path.join(c.dir, "certs")
        run(["sh", MKCERTS, "-o", good, "-c", "localhost", "-c", "127.0.0.1",
             "n0"])
        test_resumption(c, good)
    with Cluster("tls-fifo") as c:
        good = os.path.join(c.dir, "certs")
        run(["sh", MKCERTS, "-o", good, "-c", "localhost", "-c", "127.0.0.1",
             "n0"])
        test_fifo(c, good)
        c.coord.stop()
        test_stalled_handshakes(c, good)


if __name__ == "__main__":
    main(test)
