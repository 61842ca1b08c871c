#!/bin/sh
# Propagation: from the admin request to every rank's segment holding the new
# generation, 16 agents x 8 ranks on loopback, against MindSpore 2.4's polling
# measured in the same run.
#
#   sh bench/propagation.sh BUILD_DIR [TRIALS]      (default 100 trials)
#
# A coordinator, 16 agents (each its own node name, socket and segment
# directory) and 8 dynprof-train-sim ranks per node.  dynprof-propagation maps
# the 16 segments read-only and, TRIALS times, sends a config change to the
# admin API and polls the 16 headers until each holds the new generation (what
# every rank reads at its next step).  Then the seed baseline
# (../shared/anchors/seed_ms24/seed_baseline.py, or $DYNPROF_SEED_BASELINE)
# measures MindSpore's profiler_config.json polling, and the ratio is printed.
# With DYNPROF_SEED_OUTPUT=FILE (bench/run.sh's seed run, same session) its
# figures are taken from FILE instead of running the seed again; with
# DYNPROF_SEED_OUTPUT=none the seed is not run.  PROP_NODES and PROP_RANKS
# change the 16 x 8; PROP_COORD_FLAGS are added to the coordinator's flags
# (bench/etcd.sh: its store in etcd).
set -eu

BUILD=${1:-build}
TRIALS=${2:-100}
NODES=${PROP_NODES:-16}
RANKS=${PROP_RANKS:-8}
JOB=prop
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=${DYNPROF_SEED_BASELINE:-$HERE/../../shared/anchors/seed_ms24/seed_baseline.py}
SEED_TRIALS=${SEED_TRIALS:-8}

COORD=$BUILD/server/dynprof-coordinator
AGENT=$BUILD/agent/dynprof-agent
SIM=$BUILD/examples/dynprof-train-sim
PROP=$BUILD/bench/dynprof-propagation
for b in "$COORD" "$AGENT" "$SIM" "$PROP"; do
	[ -x "$b" ] || { echo "propagation: $b missing: build first" >&2; exit 1; }
done

D=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-prop.XXXXXX")
PIDS=""
cleanup() {
	for p in $PIDS; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_file() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 200 ] && { echo "propagation: $1 never said $2" >&2; exit 1; }
		sleep 0.1
	done
}

mkdir -p "$D/state"
# shellcheck disable=SC2086
"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/state" \
    --ready-file "$D/coord.ready" -q ${PROP_COORD_FLAGS:-} >"$D/coord.log" 2>&1 &
PIDS="$! $PIDS"
wait_file "$D/coord.ready" http_port
AP=$(sed -n 's/^agent_port=//p' "$D/coord.ready")
HP=$(sed -n 's/^http_port=//p' "$D/coord.ready")

SEGS=""
n=0
while [ $n -lt $NODES ]; do
	nd=$D/node$n
	mkdir -p "$nd/shm" "$nd/out"
	"$AGENT" --coordinator "127.0.0.1:$AP" --node "node$n" \
	    --socket "$nd/agent.sock" --shm-dir "$nd/shm" \
	    --ready-file "$nd/agent.ready" -q >"$nd/agent.log" 2>&1 &
	PIDS="$! $PIDS"
	SEGS="$SEGS $nd/shm/dynprof.$JOB"
	n=$((n + 1))
done
n=0
while [ $n -lt $NODES ]; do
	nd=$D/node$n
	wait_file "$nd/agent.ready" socket=
	k=0
	while [ $k -lt $RANKS ]; do
		DYNPROF_SHM_DIR="$nd/shm" DYNPROF_AGENT_SOCKET="$nd/agent.sock" \
		DYNPROF_OUTPUT_ROOT="$nd/out" \
		    "$SIM" --job $JOB --rank $((n * RANKS + k)) --steps-per-sec 20 -q \
		    >/dev/null 2>&1 &
		PIDS="$! $PIDS"
		k=$((k + 1))
	done
	n=$((n + 1))
done
echo "propagation: $NODES agents x $RANKS ranks up; $TRIALS changes through the admin API"

# shellcheck disable=SC2086
"$PROP" --http "127.0.0.1:$HP" --job $JOB --trials "$TRIALS" $SEGS | tee "$D/prop.out"
[ "${DYNPROF_SEED_OUTPUT:-}" = none ] && exit 0

if [ -n "${DYNPROF_SEED_OUTPUT:-}" ] &&
    grep -q '^propagation_ms' "$DYNPROF_SEED_OUTPUT" 2>/dev/null; then
	echo "propagation: MindSpore 2.4 DynamicProfilerMonitor (from $DYNPROF_SEED_OUTPUT)"
	cp "$DYNPROF_SEED_OUTPUT" "$D/seed.out"
	seed_ok=1
else
	echo "propagation: MindSpore 2.4 DynamicProfilerMonitor ($SEED_TRIALS trials, local disk)"
	seed_ok=0
	# Its temporary directories go under ours, removed with it.
	[ -f "$SEED" ] && TMPDIR="$D" python3 "$SEED" "" "$SEED_TRIALS" \
	    >"$D/seed.out" 2>&1 &&
	    seed_ok=1
fi
if [ $seed_ok = 1 ]; then
	grep '^propagation_ms' "$D/seed.out" | sed 's/^/  seed: /'
	awk '
	/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] } }
	/^propagation_ms/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] } }
	END {
		printf "propagation: dynprof median %.3f ms, p99 %.3f ms, max %.3f ms (target p99 < 5 ms)\n",
		    r["median_ms"], r["p99_ms"], r["max_ms"]
		printf "propagation: MindSpore median %s ms, max %s ms\n", s["median"], s["max"]
		if (r["median_ms"] > 0)
			printf "propagation: ratio MindSpore/dynprof: median %.0fx, worst %.0fx\n",
			    s["median"] / r["median_ms"], s["max"] / r["max_ms"]
	}' "$D/prop.out" "$D/seed.out"
else
	echo "propagation: seed baseline not run ($SEED): $(tail -n 3 "$D/seed.out" 2>/dev/null)"
fi
