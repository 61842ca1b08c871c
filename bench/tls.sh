#!/bin/sh
# AgentLink with mutual TLS against plaintext, in one run, at N agents.
#
#   sh bench/tls.sh BUILD_DIR [AGENTS]          (default 1000)
#   HEARTBEAT_MS=N: the coordinator's heartbeat (2000); a loaded machine that
#   takes minutes over 10,000 handshakes needs more, or agents connected first
#   are dropped as silent while the loadgen is busy with the others.
#
# Makes a CA and the coordinator's certificate with deploy/tls/mkcerts.sh, then
# for plaintext and for TLS: a fresh coordinator (TLS: --tls-cert/--tls-key/
# --tls-ca) and dynprof-loadgen with AGENTS connections (TLS: --tls-dir, each
# connection a certificate of its own, which the loadgen issues with that CA
# before the clock starts).  Connect rate: AGENTS / the time until every connection has
# done TCP, the handshake, hello, welcome and subscribe, dynprof-loadgen's
# --concurrency (256) at a time.  Then 20 config changes (fan-out) and 20 events
# per agent, as bench/fanout.sh.  Then "resumed": the TLS coordinator restarted
# with its state directory (its session ticket keys), and every agent
# reconnecting with the session the TLS run gave it (dynprof-loadgen
# --tls-sessions), then the fan-out again; the "tls" row is the same restart
# without resumption (a coordinator without the keys makes full handshakes).
# Prints one table.
set -eu

BUILD=${1:-build}
N=${2:-1000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
. "$SRC/bench/lib.sh"
bench_start tls

sh "$SRC/deploy/tls/mkcerts.sh" -o "$D/certs" -c 127.0.0.1 >/dev/null
echo "tls: $(nproc) cores, coordinator and loadgen on the same machine"

C="$D/certs"
echo "tls: plaintext, $N agents ..."
bench_loadgen plain "$N" "--heartbeat-ms ${HEARTBEAT_MS:-2000}" ""
TLSFLAGS="--heartbeat-ms ${HEARTBEAT_MS:-2000} --tls-cert $C/coordinator.crt --tls-key $C/coordinator.key --tls-ca $C/ca.crt"
echo "tls: mutual TLS, $N agents ..."
bench_loadgen tls "$N" "$TLSFLAGS" "--tls-dir $C --tls-sessions $D/sessions"
echo "tls: mutual TLS, $N agents resuming their sessions after a coordinator restart ..."
BENCH_KEEP_STATE=1 bench_loadgen resumed "$N" "$TLSFLAGS" \
    "--tls-dir $C --tls-sessions $D/sessions --mode fanout"

awk "$BENCH_AWK_V"'
BEGIN {
	printf "\n%7s %7s %7s %8s %11s %10s %17s %17s %9s %17s %9s\n", "",
	    "agents", "resumed", "connect", "connects/s", "coord CPU",
	    "fan-out ms", "all applied ms", "events/s", "coord RSS MiB",
	    "coord CPU"
	printf "%7s %7s %7s %8s %11s %10s %17s %17s %9s %17s %9s\n", "", "",
	    "", "s", "(handshakes)", "ms/connect", "median / max",
	    "median / max", "acked", "idle/after/peak", "s total"
}
{
	printf "%7s %7s %7s %8s %11.0f %10.3f %8s / %6s %8s / %6s %9s %5s/%5s/%5s %9s\n",
	    $1, v("agents"), v("resumed"), v("connect_s"),
	    v("agents") / v("connect_s"),
	    1000 * v("cpu_connect_s") / v("agents"),
	    v("fanout_median_ms"), v("fanout_max_ms"), v("applied_median_ms"),
	    v("applied_max_ms"), v("events_per_s"), v("rss_idle_mib"),
	    v("rss_mib"), v("rss_peak_mib"), v("cpu_total_s")
}' "$D/results"
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
