#!/bin/sh
# Failover at scale: three coordinators over one etcd member on loopback
# (tests/support/etcd.py starts it for the run), AGENTS agents of
# dynprof-loadgen on the leader; the leader is SIGKILLed and loadgen times,
# from the kill, the first agent welcomed by a new leader and the last, each
# connection going on as a real agent does (the next coordinator of its
# list, the leader a follower names, backoff after a whole round).
#
#   sh bench/failover.sh BUILD_DIR [AGENTS] [TTL]	(default 1000 agents, 5 s)
set -eu

BUILD=${1:-build}
AGENTS=${2:-1000}
TTL=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd)

if [ -z "${DYNPROF_ETCD_ENDPOINTS:-}" ]; then
	exec python3 "$HERE/../tests/support/etcd.py" -- sh "$0" "$BUILD" \
	    "$AGENTS" "$TTL"
fi
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
for b in "$COORD" "$LOADGEN"; do
	[ -x "$b" ] || { echo "failover: $b missing: build first" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_scratch failover

AGENT_ADDRS=""
LEADER_PID=""
LEADER_HTTP=""
for i in 0 1 2; do
	"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/s$i" \
	    --ready-file "$D/c$i.ready" -q --etcd-endpoints \
	    "$DYNPROF_ETCD_ENDPOINTS" --etcd-prefix "/failover-$$/" \
	    --etcd-lease-ttl "$TTL" >"$D/c$i.log" 2>&1 &
	pid=$!
	PIDS="$pid $PIDS"
	n=0
	until grep -q http_port "$D/c$i.ready" 2>/dev/null; do
		n=$((n + 1))
		[ $n -gt 200 ] && { echo "failover: coordinator $i not ready" >&2; exit 1; }
		sleep 0.1
	done
	ap=$(sed -n 's/^agent_port=//p' "$D/c$i.ready")
	hp=$(sed -n 's/^http_port=//p' "$D/c$i.ready")
	AGENT_ADDRS="$AGENT_ADDRS${AGENT_ADDRS:+,}127.0.0.1:$ap"
	if curl -s "http://127.0.0.1:$hp/healthz" | grep -q '"leader"'; then
		LEADER_PID=$pid
		LEADER_HTTP=127.0.0.1:$hp
	fi
done
[ -n "$LEADER_PID" ] || { echo "failover: no leader" >&2; exit 1; }
echo "failover: 3 coordinators (lease $TTL s), the leader pid $LEADER_PID; $AGENTS agents"
"$LOADGEN" --coordinator "$AGENT_ADDRS" --http "$LEADER_HTTP" \
    --agents "$AGENTS" --mode failover --kill-pid "$LEADER_PID"
