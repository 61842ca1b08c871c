#!/bin/bash
# dynprofctl over HTTPS against TLS servers on 127.0.0.1 (Python's http.server
# in ssl, certificates made here with openssl, canned /v1 answers): a trusted
# server, one that requires a client certificate, a CA that does not match,
# and 307 redirects to a coordinator in --coordinator (followed, token and body
# kept) and to one not in it (refused, nothing sent).  Then the real
# coordinator's HTTPS, with and without client certificates required: jobs,
# trace and status through it, a wrong CA, plain http to it, no client
# certificate, and one of another CA.
set -eu

CTL_TEST=dynprof-ctl-https
. "$(dirname "$0")/../support/test_ctl_lib.sh"

# --- Certificates: a CA, the server (127.0.0.1 and localhost), a client;
# and another CA that signed none of them.
cd "$T"
ossl() { openssl "$@" >>"$T/openssl.out" 2>&1 || fail "openssl $1"; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 2 -subj /CN=test-ca \
    -keyout ca.key -out ca.pem
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 2 -subj /CN=other-ca \
    -keyout other.key -out other.pem
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=coordinator -keyout server.key \
    -out server.csr
ossl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 2 -extfile server.ext -out server.pem
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=operator -keyout client.key \
    -out client.csr
ossl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 2 -out client.pem
cat client.pem client.key >client-both.pem

# --- The servers.
cat >"$T/server.py" <<'EOF'
# server.py NAME PORTFILE [--client-ca CA] [--redirect URL]: HTTPS on
# 127.0.0.1, port 0; logs each request (method path authorization body).
import http.server, json, ssl, sys

name, portfile = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
client_ca = redirect = None
while args:
    if args[0] == "--client-ca":
        client_ca = args[1]
    elif args[0] == "--redirect":
        redirect = args[1]
    args = args[2:]

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self, code, doc, extra=()):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        with open(name + ".requests", "a") as f:
            f.write("%s %s %s %s\n" % (self.command, self.path,
                    self.headers.get("Authorization", "-"), body or "-"))
        if self.path == "/v1/jobs" and self.command == "GET":
            self.answer(200, {"jobs": []})
        elif self.path == "/v1/jobs/J/windows" and self.command == "POST":
            if redirect:
                self.answer(307, {"error": "not the leader"},
                            [("Location", redirect + self.path)])
            else:
                self.answer(201, {"id": 7, "start_step": 10,
                                  "stop_step": 12, "ranks": ""})
        else:
            self.answer(404, {"error": "no such endpoint"})
    do_GET = do_POST = do_PUT = do_DELETE = handle_any

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("server.pem", "server.key")
if client_ca:
    ctx.load_verify_locations(client_ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
EOF

# start NAME ARGS...: one server; sets PORT.
start() {
	local name=$1 i
	shift
	python3 "$T/server.py" "$name" "$T/$name.port" "$@" \
	    >"$T/$name.log" 2>&1 &
	PIDS+=($!)
	for i in $(seq 1 200); do
		[ -s "$T/$name.port" ] && break
		kill -0 $! 2>/dev/null || fail "server $name died"
		sleep 0.05
	done
	[ -s "$T/$name.port" ] || fail "server $name never listened"
	PORT=$(cat "$T/$name.port")
}

start plain
PLAIN=https://127.0.0.1:$PORT
start mtls --client-ca ca.pem
MTLS=https://127.0.0.1:$PORT
start leader
LEADER=https://127.0.0.1:$PORT
start follower --redirect "$LEADER"
FOLLOWER=https://127.0.0.1:$PORT
start stranger --redirect "https://localhost:$PORT"
STRANGER=https://127.0.0.1:$PORT
unset DYNPROF_COORDINATOR DYNPROF_TOKEN DYNPROF_CACERT DYNPROF_CERT DYNPROF_KEY

# --- A trusted server: the CA from the flag or from the environment.
run --coordinator "$PLAIN" --cacert ca.pem jobs
expect_rc 0; expect_out "no jobs"
DYNPROF_CACERT=ca.pem run --coordinator "$PLAIN" jobs
expect_rc 0; expect_out "no jobs"
# A proxy in the environment is not used (it would see the token).
https_proxy=http://127.0.0.1:1 ALL_PROXY=http://127.0.0.1:1 \
    run --coordinator "$PLAIN" --cacert ca.pem jobs
expect_rc 0; expect_out "no jobs"
DYNPROF_CACERT=ca.pem DYNPROF_TOKEN=tok run --coordinator "$PLAIN" \
    trace J --start 10 --steps 3
expect_rc 0; expect_out "window 7: steps 10-12 on all ranks"
grep -qF 'POST /v1/jobs/J/windows Bearer tok {"start_step":10' \
    "$T/plain.requests" || fail "request not seen by the server"

# --- A CA that did not sign it, or none: exit 2, saying it is TLS.
run --coordinator "$PLAIN" --cacert other.pem jobs
expect_rc 2
expect_err "dynprofctl: cannot reach coordinator at $PLAIN: TLS: "
expect_err "certificate"
run --coordinator "$PLAIN" jobs
expect_rc 2; expect_err "TLS: "
run --coordinator "$PLAIN" --cacert "$T/nosuch.pem" jobs
expect_rc 1; expect_err "cannot read --cacert $T/nosuch.pem"

# --- A server that requires a client certificate.
run --coordinator "$MTLS" --cacert ca.pem jobs
expect_rc 2
expect_err "dynprofctl: cannot reach coordinator at $MTLS: "
expect_err "the coordinator wants a client certificate: --cert F --key F"
run --coordinator "$MTLS" --cacert ca.pem --cert client.pem \
    --key client.key jobs
expect_rc 0; expect_out "no jobs"
DYNPROF_CACERT=ca.pem DYNPROF_CERT=client.pem DYNPROF_KEY=client.key \
    run --coordinator "$MTLS" jobs
expect_rc 0; expect_out "no jobs"
run --coordinator "$MTLS" --cacert ca.pem --cert client-both.pem jobs
expect_rc 0; expect_out "no jobs"
run --coordinator "$MTLS" --cacert ca.pem --key client.key jobs
expect_rc 1; expect_err "--key (or DYNPROF_KEY) needs --cert"

# --- http:// to a TLS port: a clear error, not a hang.
run --coordinator "http://127.0.0.1:${PLAIN##*:}" jobs
expect_rc 2; expect_err "cannot reach coordinator at http://127.0.0.1:"
expect_err "(an https:// coordinator?)"

# --- A 307 to the leader, named in --coordinator: followed, same request.
DYNPROF_TOKEN=tok run --coordinator "$FOLLOWER,$LEADER" --cacert ca.pem \
    trace J --start 10 --steps 3
expect_rc 0; expect_out "window 7: steps 10-12 on all ranks"
grep -qF 'POST /v1/jobs/J/windows Bearer tok {"start_step":10' \
    "$T/follower.requests" || fail "follower saw no POST"
grep -qF 'POST /v1/jobs/J/windows Bearer tok {"start_step":10' \
    "$T/leader.requests" || fail "leader saw no POST with the token"

# --- A 307 to a host not in --coordinator: refused, nothing sent there.
: >"$T/leader.requests"
DYNPROF_TOKEN=tok run --coordinator "$FOLLOWER" --cacert ca.pem \
    trace J --start 10 --steps 3
expect_rc 1
expect_err "redirected to $LEADER/v1/jobs/J/windows, which is not one of the coordinators given"
[ ! -s "$T/leader.requests" ] || fail "the leader got a request"
# Same port as a named one but another host name: still refused.
: >"$T/stranger.requests"
DYNPROF_TOKEN=tok run --coordinator "$STRANGER" --cacert ca.pem \
    trace J --start 10 --steps 3
expect_rc 1; expect_err "not one of the coordinators given"
[ "$(wc -l <"$T/stranger.requests")" -eq 1 ] || fail "redirect followed"

# --- A list: the first that can be reached answers.
run --coordinator "https://127.0.0.1:1,$PLAIN" --cacert ca.pem jobs
expect_rc 0; expect_out "no jobs"
run --coordinator "https://127.0.0.1:1,https://127.0.0.1:2" jobs
expect_rc 2; expect_err "127.0.0.1:2: Connection refused"

# --- The real coordinator's HTTPS (--http-tls-cert, --http-tls-key), with the
# same certificates: what dynprofctl does against the canned servers above it
# must do against the coordinator itself.
start_coord tls --http-tls-cert server.pem --http-tls-key server.key
TLS=https://127.0.0.1:$HTTP_PORT
run --coordinator "$TLS" --cacert ca.pem jobs
expect_rc 0; expect_out "no jobs"
run --coordinator "$TLS" --cacert ca.pem trace J --start 10 --steps 3
expect_rc 0; expect_out_re '^window 1: steps 10-12 on all ranks$'
DYNPROF_CACERT=ca.pem run --coordinator "$TLS" --json status J
expect_rc 0
json 'd["windows"][0]["start_step"] == 10 and d["windows"][0]["stop_step"] == 12'
run --coordinator "$TLS" --cacert other.pem jobs
expect_rc 2
expect_err "dynprofctl: cannot reach coordinator at $TLS: TLS: "
expect_err "certificate"
run --coordinator "http://127.0.0.1:$HTTP_PORT" jobs
expect_rc 2; expect_err "(an https:// coordinator?)"

# --- Connection hints: what is on the port named.  The agent port: said so.
run --coordinator "http://127.0.0.1:$AGENT_PORT" jobs
expect_rc 2
expect_err "(port $AGENT_PORT is the coordinator's agent port, which speaks framed protobuf; dynprofctl talks to its admin API, the --http port, 7879 by default)"
run --coordinator "https://127.0.0.1:$AGENT_PORT" --cacert ca.pem jobs
expect_rc 2; expect_err "is the coordinator's agent port"
# https:// to a plain HTTP port: said, no talk of client certificates.
start_coord plain-hints
run --coordinator "https://127.0.0.1:$HTTP_PORT" --cacert ca.pem jobs
expect_rc 2
expect_err "(port $HTTP_PORT speaks plain HTTP: http://127.0.0.1:$HTTP_PORT)"
if grep -q "client certificate" "$T/err"; then fail "client certificates hinted"; fi
# The status page's address works as the coordinator's.
run --coordinator "http://127.0.0.1:$HTTP_PORT/ui/" jobs
expect_rc 0; expect_out "no jobs"
run --coordinator "http://127.0.0.1:$HTTP_PORT/ui/#token=x" jobs
expect_rc 1; expect_err "(a token goes in --token-file or DYNPROF_TOKEN)"
# The default address, unreachable here: how to give another.
DYNPROF_COORDINATOR= run jobs
if [ "$RC" -eq 2 ]; then
	expect_err "(the default address: give --coordinator URL or set DYNPROF_COORDINATOR)"
fi

# --- And requiring client certificates of the CA (--http-tls-ca).
start_coord mtls-coord --http-tls-cert server.pem --http-tls-key server.key \
    --http-tls-ca ca.pem
MTLSC=https://127.0.0.1:$HTTP_PORT
run --coordinator "$MTLSC" --cacert ca.pem jobs
expect_rc 2
expect_err "dynprofctl: cannot reach coordinator at $MTLSC: "
expect_err "the coordinator wants a client certificate: --cert F --key F"
run --coordinator "$MTLSC" --cacert ca.pem --cert client.pem --key client.key \
    trace J --start 20 --steps 2
expect_rc 0; expect_out_re '^window 1: steps 20-21 on all ranks$'
DYNPROF_CACERT=ca.pem DYNPROF_CERT=client-both.pem run --coordinator "$MTLSC" \
    --json status J
expect_rc 0; json 'd["windows"][0]["start_step"] == 20'
# A client certificate of another CA: refused in the handshake, no window.
ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=intruder -keyout intruder.key -out intruder.csr
ossl x509 -req -in intruder.csr -CA other.pem -CAkey other.key \
    -CAcreateserial -days 2 -out intruder.pem
run --coordinator "$MTLSC" --cacert ca.pem --cert intruder.pem \
    --key intruder.key trace J --start 30 --steps 2
expect_rc 2; expect_err "cannot reach coordinator at $MTLSC"
run --coordinator "$MTLSC" --cacert ca.pem --cert client.pem --key client.key \
    --json status J
expect_rc 0; json 'len(d["windows"]) == 1'

echo "PASS"
