#!/bin/sh
# Failover at scale: three coordinators over a 3-member etcd on loopback
# (tests/support/etcd.py --members 3 starts it for the run), AGENTS agents of
# dynprof-loadgen with RANKS ranks each on the leader.  Each agent sends its
# ranks' start and stop (2 x RANKS events); once half of all are
# acknowledged, loadgen SIGKILLs the leader and times, from the kill, the
# first agent welcomed by a new leader, the last, and every event
# acknowledged again, each connection going on by the agent's own rule
# (common/failover.c); it counts each one's ERROR_NOT_LEADER answers.  Then
# bench/failover_check.py reads every rank from the new leader: each rank's
# start and stop there exactly once.  RUNS runs, each with fresh coordinators
# under a fresh etcd prefix.
#
#   sh bench/failover.sh BUILD_DIR [AGENTS] [TTL] [RANKS] [RUNS]
#	(default 1000 agents, 5 s, 10 ranks, 1 run)
set -eu

BUILD=${1:-build}
AGENTS=${2:-1000}
TTL=${3:-5}
RANKS=${4:-10}
RUNS=${5:-1}
HERE=$(cd "$(dirname "$0")" && pwd)

if [ -z "${DYNPROF_ETCD_ENDPOINTS:-}" ]; then
	exec python3 "$HERE/../tests/support/etcd.py" --members 3 -- sh "$0" \
	    "$BUILD" "$AGENTS" "$TTL" "$RANKS" "$RUNS"
fi
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_start failover

# run N: three coordinators, the loadgen's failover, the check.
run()
{
	AGENT_ADDRS=""
	HTTP_ADDRS=""
	LEADER_PID=""
	LEADER_HTTP=""
	PIDS=""
	for i in 0 1 2; do
		"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
		    --state-dir "$D/r$1s$i" --ready-file "$D/r$1c$i.ready" ${FAILOVER_VERBOSE:--q} \
		    --etcd-endpoints "$DYNPROF_ETCD_ENDPOINTS" \
		    --etcd-prefix "/failover-$$-$1/" --etcd-lease-ttl "$TTL" \
		    >"$D/r$1c$i.log" 2>&1 &
		pid=$!
		PIDS="$pid $PIDS"
		n=0
		until grep -q http_port "$D/r$1c$i.ready" 2>/dev/null; do
			n=$((n + 1))
			[ $n -gt 200 ] && { echo "failover: coordinator $i not ready" >&2; exit 1; }
			sleep 0.1
		done
		ap=$(sed -n 's/^agent_port=//p' "$D/r$1c$i.ready")
		hp=$(sed -n 's/^http_port=//p' "$D/r$1c$i.ready")
		AGENT_ADDRS="$AGENT_ADDRS${AGENT_ADDRS:+,}127.0.0.1:$ap"
		HTTP_ADDRS="$HTTP_ADDRS 127.0.0.1:$hp"
		n=0
		until curl -s -m 5 "http://127.0.0.1:$hp/healthz" | grep -q role; do
			n=$((n + 1))
			[ $n -gt 600 ] && { echo "failover: coordinator $i silent" >&2
			    tail -n 20 "$D/r$1c$i.log" >&2; exit 1; }
			sleep 0.1
		done
		if curl -s "http://127.0.0.1:$hp/healthz" | grep -q '"leader"'; then
			LEADER_PID=$pid
			LEADER_HTTP=127.0.0.1:$hp
		fi
	done
	[ -n "$LEADER_PID" ] || { echo "failover: no leader" >&2; exit 1; }
	echo "failover run $1: 3 coordinators (lease $TTL s), the leader pid" \
	    "$LEADER_PID; $AGENTS agents x $RANKS ranks; load average" \
	    "$(cut -d' ' -f1-3 /proc/loadavg)"
	# The leader first: every agent starts there.
	AGENT_ADDRS=$(echo "$AGENT_ADDRS" | tr , '\n' | awk -v l="$LEADER_HTTP" \
	    -v h="$HTTP_ADDRS" 'BEGIN { split(h, hs, " ") }
	    { a[NR] = $0; if (hs[NR] == l) first = NR }
	    END { printf "%s", a[first]; for (i = 1; i <= NR; i++)
	        if (i != first) printf ",%s", a[i]; print "" }')
	# The job's window 1, steps 100-104: the loadgen's events are its
	# start and stop on every rank.
	curl -sf -X POST -d '{"start_step": 100, "stop_step": 104}' \
	    "http://$LEADER_HTTP/v1/jobs/fo$1/windows" >/dev/null ||
	    { echo "failover: cannot post the window" >&2; exit 1; }
	"$LOADGEN" --coordinator "$AGENT_ADDRS" --http "$LEADER_HTTP" \
	    --agents "$AGENTS" --ranks "$RANKS" --events $((2 * RANKS)) \
	    --sources 4 --job "fo$1" --mode failover --kill-pid "$LEADER_PID" \
	    >"$D/loadgen$1.out" 2>&1 || {
		rc=$?
		cat "$D/loadgen$1.out" >&2
		echo "failover: dynprof-loadgen exited $rc" >&2
		[ -z "${FAILOVER_LOGS:-}" ] || cp "$D"/r"$1"c*.log "$FAILOVER_LOGS"/
		for f in "$D"/r"$1"c*.log; do
			echo "--- $f" >&2
			grep -v ' info: ' "$f" | tail -n 15 >&2
		done
		exit 1
	}
	grep -v '^RESULT' "$D/loadgen$1.out"
	# shellcheck disable=SC2086
	python3 "$HERE/failover_check.py" "fo$1" $((AGENTS * RANKS)) $HTTP_ADDRS ||
	    { [ -z "${FAILOVER_LOGS:-}" ] || cp "$D"/r"$1"c*.log "$FAILOVER_LOGS"/; exit 1; }
	[ -z "${FAILOVER_LOGS:-}" ] || cp "$D"/r"$1"c*.log "$FAILOVER_LOGS"/
	echo "run=$1 load=$(cut -d' ' -f1 /proc/loadavg)" \
	    "$(sed -n 's/^RESULT //p' "$D/loadgen$1.out")" >>"$D/results"
	for p in $PIDS; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}

RUN=1
while [ "$RUN" -le "$RUNS" ]; do
	run "$RUN"
	RUN=$((RUN + 1))
done
echo "raw:"
cat "$D/results"
