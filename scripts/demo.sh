#!/bin/sh
# dynprof demo: a whole cluster on this machine, doing its real job.
#
#   sh scripts/demo.sh BUILD_DIR        (make demo runs it)
#
# Starts a coordinator, three agents (each its own "node": own socket, own
# segment directory, own node name) and four simulated training ranks per node
# (dynprof-train-sim, 20 steps a second, whose profiler writes trace.json), all
# under one temporary directory with ports the kernel picks.  Then schedules a
# window with dynprofctl ("start in 20 steps, run 5"), waits for it, prints the
# per-rank status, checks every trace file, and stops everything.  Nothing is
# left running, whatever happens (trap on EXIT).  DEMO_KEEP=1 keeps the directory.
set -eu

BUILD=${1:-build}
JOB=demo
NODES="node1 node2 node3"
RANKS_PER_NODE=4
RATE=20

COORD=$BUILD/server/dynprof-coordinator
AGENT=$BUILD/agent/dynprof-agent
CTL=$BUILD/ctl/dynprofctl
SIM=$BUILD/examples/dynprof-train-sim

for b in "$COORD" "$AGENT" "$CTL" "$SIM"; do
	if [ ! -x "$b" ]; then
		echo "demo: $b is missing: build first (make build)" >&2
		exit 1
	fi
done

say() {
	printf '\n==> %s\n' "$*"
}

D=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-demo.XXXXXX")
PIDS=""
LOGS=""

# started LOG: the process just started in the background writes LOG.
started() {
	PIDS="$! $PIDS"
	LOGS="$LOGS $!=$1"
}

cleanup() {
	rc=$?
	trap - EXIT INT TERM
	if [ -n "$PIDS" ]; then
		say "stopping every process the demo started"
		# Ranks first, then agents, then the coordinator: PIDS is newest first.
		for p in $PIDS; do
			kill -TERM "$p" 2>/dev/null || true
		done
		i=0
		while [ $i -lt 100 ]; do
			left=""
			for p in $PIDS; do
				kill -0 "$p" 2>/dev/null && left="$left $p"
			done
			[ -z "$left" ] && break
			sleep 0.1
			i=$((i + 1))
		done
		for p in $left; do
			echo "    $p did not stop on SIGTERM: SIGKILL"
			kill -KILL "$p" 2>/dev/null || true
		done
		# Each one stops cleanly on SIGTERM: exit 0 and, in a sanitizer
		# build, no report in its log.  Anything else fails the demo.
		bad=0
		for p in $PIDS; do
			st=0
			wait "$p" 2>/dev/null || st=$?
			log=$(printf '%s\n' $LOGS | sed -n "s|^$p=||p")
			why=""
			if [ "$st" -ne 0 ]; then
				why="exited $st on SIGTERM"
			elif grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' \
			    "$log" 2>/dev/null; then
				why="a sanitizer report"
			fi
			[ -z "$why" ] && continue
			echo "demo: FAILED: pid $p ($log): $why" >&2
			tail -n 30 "$log" >&2 2>/dev/null || true
			bad=1
		done
		[ "$bad" = 1 ] && [ "$rc" = 0 ] && rc=1
		echo "    all stopped"
	fi
	if [ "${DEMO_KEEP:-0}" = 1 ]; then
		echo "    kept $D (logs, traces, state)"
	else
		rm -rf "$D"
		echo "    removed $D (DEMO_KEEP=1 keeps its logs, traces and state)"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits up to $2 tenths of a second for file $1 to hold "$3".
wait_file() {
	i=0
	while ! grep -q "$3" "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt "$2" ]; then
			return 1
		fi
		sleep 0.1
	done
}

fail() {
	echo "demo: FAILED: $*" >&2
	for f in "$D"/coordinator.log "$D"/*/agent.log; do
		[ -f "$f" ] || continue
		echo "--- last lines of $f" >&2
		tail -n 15 "$f" >&2
	done
	exit 1
}

say "working directory $D"

say "starting the coordinator (agent and admin ports picked by the kernel)"
mkdir -p "$D/state"
"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/state" \
    --heartbeat-ms 1000 --ready-file "$D/coord.ready" \
    >"$D/coordinator.log" 2>&1 &
started "$D/coordinator.log"
wait_file "$D/coord.ready" 100 http_port || fail "the coordinator did not start"
AGENT_PORT=$(sed -n 's/^agent_port=//p' "$D/coord.ready")
HTTP_PORT=$(sed -n 's/^http_port=//p' "$D/coord.ready")
DYNPROF_COORDINATOR=http://127.0.0.1:$HTTP_PORT
export DYNPROF_COORDINATOR
echo "    agents connect to 127.0.0.1:$AGENT_PORT, admin API at $DYNPROF_COORDINATOR"

say "starting one agent per node: $NODES"
for n in $NODES; do
	mkdir -p "$D/$n/shm" "$D/$n/traces"
	"$AGENT" --coordinator "127.0.0.1:$AGENT_PORT" --node "$n" \
	    --socket "$D/$n/agent.sock" --shm-dir "$D/$n/shm" \
	    --sample-interval 200 --ready-file "$D/$n/agent.ready" \
	    >"$D/$n/agent.log" 2>&1 &
	started "$D/$n/agent.log"
done
for n in $NODES; do
	wait_file "$D/$n/agent.ready" 100 socket= || fail "agent $n did not start"
	echo "    $n: socket $D/$n/agent.sock, segments in $D/$n/shm"
done

say "starting $RANKS_PER_NODE training ranks per node (job $JOB, $RATE steps/s)"
rank=0
for n in $NODES; do
	list=""
	k=0
	while [ $k -lt $RANKS_PER_NODE ]; do
		DYNPROF_SHM_DIR="$D/$n/shm" DYNPROF_AGENT_SOCKET="$D/$n/agent.sock" \
		DYNPROF_OUTPUT_ROOT="$D/$n/traces" \
		    "$SIM" --job $JOB --rank $rank --steps-per-sec $RATE \
		    >"$D/$n/rank$rank.log" 2>&1 &
		started "$D/$n/rank$rank.log"
		list="$list $rank"
		rank=$((rank + 1))
		k=$((k + 1))
	done
	echo "    $n: ranks$list"
done
NRANKS=$rank

printf '    waiting for all %d ranks to report their steps ' "$NRANKS"
i=0
while :; do
	n=$("$CTL" --json status $JOB 2>/dev/null | python3 -c '
import json, sys
try:
    st = json.load(sys.stdin)
except ValueError:
    print(0); sys.exit()
# The summary: live ranks that reported a step, and the lowest of them.
steps = st.get("steps") or {}
print(steps.get("ranks", 0) if (steps.get("min") or 0) > 0 else 0)' \
	    2>/dev/null || echo 0)
	[ "$n" -ge "$NRANKS" ] && break
	i=$((i + 1))
	[ $i -gt 150 ] && { echo; fail "only $n of $NRANKS ranks reported in 15 s"; }
	printf '.'
	sleep 0.1
done
echo " $NRANKS ranks up"
"$CTL" jobs

say "dynprofctl trace $JOB --in 20 --steps 5 --wait"
echo "    (start 20 steps after the highest step any rank reported, profile 5 steps,"
echo "     on every rank of every node at the same steps)"
"$CTL" trace $JOB --in 20 --steps 5 --wait --timeout 40 ||
    fail "the window did not complete on every rank"

say "dynprofctl status $JOB"
"$CTL" status $JOB

say "checking the trace file of every rank"
found=0
for n in $NODES; do
	for f in "$D/$n"/traces/rank*_start*_stop*/trace.json; do
		[ -f "$f" ] || continue
		if ! tail -c 2 "$f" | grep -q '}'; then
			fail "$f is incomplete (the stop callback did not close it)"
		fi
		found=$((found + 1))
		echo "    $f"
	done
done
[ $found -eq "$NRANKS" ] || fail "$found trace files for $NRANKS ranks"
echo "    $found of $NRANKS ranks wrote a complete trace; one of them:"
sed 's/^/    /' "$f"

say "demo done: $NRANKS ranks on 3 nodes profiled the same 5 steps"
