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
# per agent, as bench/fanout.sh.  Prints one table.
set -eu

BUILD=${1:-build}
N=${2:-1000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
for b in "$COORD" "$LOADGEN"; do
	[ -x "$b" ] || { echo "tls: $b missing: build first" >&2; exit 1; }
done

D=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-tls.XXXXXX")
CP=""
cleanup() {
	[ -n "$CP" ] && kill "$CP" 2>/dev/null && wait "$CP" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

sh "$SRC/deploy/tls/mkcerts.sh" -o "$D/certs" -c 127.0.0.1 >/dev/null
echo "tls: $(nproc) cores, coordinator and loadgen on the same machine"

for mode in plain tls; do
	rm -rf "$D/state" "$D/ready"
	mkdir -p "$D/state"
	extra=""
	lgextra=""
	if [ "$mode" = tls ]; then
		extra="--tls-cert $D/certs/coordinator.crt --tls-key $D/certs/coordinator.key --tls-ca $D/certs/ca.crt"
		lgextra="--tls-dir $D/certs"
	fi
	# shellcheck disable=SC2086
	"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/state" \
	    --ready-file "$D/ready" --heartbeat-ms "${HEARTBEAT_MS:-2000}" -q $extra \
	    >"$D/coord-$mode.log" 2>&1 &
	CP=$!
	i=0
	until grep -q http_port "$D/ready" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "tls: coordinator did not start" >&2; exit 1; }
		sleep 0.1
	done
	ap=$(sed -n 's/^agent_port=//p' "$D/ready")
	hp=$(sed -n 's/^http_port=//p' "$D/ready")
	echo "tls: $mode, $N agents ..."
	# shellcheck disable=SC2086
	if ! "$LOADGEN" --coordinator "127.0.0.1:$ap" --http "127.0.0.1:$hp" \
	    --agents "$N" --coordinator-pid "$CP" $lgextra >"$D/loadgen-$mode.out" 2>&1; then
		cat "$D/loadgen-$mode.out" >&2
		tail -n 5 "$D/coord-$mode.log" >&2
		exit 1
	fi
	sed -n "s/^RESULT /$mode /p" "$D/loadgen-$mode.out" >>"$D/results"
	kill "$CP" 2>/dev/null || true
	wait "$CP" 2>/dev/null || true
	CP=""
done

awk '
function v(k,   i, kv) {
	for (i = 2; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == k)
			return kv[2]
	}
	return "na"
}
BEGIN {
	printf "\n%6s %7s %8s %11s %10s %17s %17s %9s %17s %9s\n", "",
	    "agents", "connect", "connects/s", "coord CPU", "fan-out ms",
	    "all applied ms", "events/s", "coord RSS MiB", "coord CPU"
	printf "%6s %7s %8s %11s %10s %17s %17s %9s %17s %9s\n", "", "", "s",
	    "(handshakes)", "ms/connect", "median / max", "median / max",
	    "acked", "idle/after/peak", "s total"
}
{
	printf "%6s %7s %8s %11.0f %10.3f %8s / %6s %8s / %6s %9s %5s/%5s/%5s %9s\n",
	    $1, v("agents"), v("connect_s"), v("agents") / v("connect_s"),
	    1000 * v("cpu_connect_s") / v("agents"),
	    v("fanout_median_ms"), v("fanout_max_ms"), v("applied_median_ms"),
	    v("applied_max_ms"), v("events_per_s"), v("rss_idle_mib"),
	    v("rss_mib"), v("rss_peak_mib"), v("cpu_total_s")
}' "$D/results"
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
