#!/bin/sh
# What the nodes' rows for followers cost (server/nodeview.c): one
# coordinator over a 3-member etcd on loopback (tests/support/etcd.py
# --members 3, fsync on), dynprof-loadgen --mode progress with AGENTS
# connections of 10 ranks each, every rank one step further each 500 ms for
# SECONDS (so every node's row changes at every housekeeping tick; with
# STILL=P, P% of the connections report their ranks still at step 1: their
# nodes' rows do not change).  Per run:
# the load average, the coordinator's CPU per second and etcd's (its 3
# members' utime + stime from /proc, summed) over the progress phase, and
# dynprof_node_rows_total (and the jobs' straggler rows,
# dynprof_view_rows_total{kind="stragglers"}).  COORDS lists coordinator
# binaries to compare (default BUILD_DIR's), each run RUNS times, interleaved; then each
# figure's median [min - max] per binary.
#
#   [COORDS="A B"] [STILL=P] sh bench/node_rows.sh BUILD_DIR [AGENTS [RUNS [SECONDS]]]
#	(default 10000 3 20)
set -eu

BUILD=${1:-build}
AGENTS=${2:-10000}
RUNS=${3:-3}
SECS=${4:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
COORD=$BUILD/server/dynprof-coordinator
COORDS=${COORDS:-$COORD}
LOADGEN=$BUILD/bench/dynprof-loadgen
. "$HERE/lib.sh"
if [ -z "${DYNPROF_ETCD_ENDPOINTS:-}" ]; then
	COORDS=$COORDS exec python3 "$HERE/../tests/support/etcd.py" \
	    --members 3 -- sh "$0" "$BUILD" "$AGENTS" "$RUNS" "$SECS"
fi

bench_start noderows

# run COORDINATOR: one loadgen run, its RESULT line appended to $D/results.
run()
{
	_load=$(cut -d' ' -f1 /proc/loadavg)
	echo "node_rows: run $R, $1, $AGENTS agents, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	rm -rf "$D/state"
	bench_coord_start "$1" "--etcd-endpoints $DYNPROF_ETCD_ENDPOINTS \
	    --etcd-prefix /bench-$$-$R/" "$D/coord.log"
	bench_wait_leader
	if ! "$LOADGEN" --coordinator "127.0.0.1:$_ap" --http "127.0.0.1:$_hp" \
	    --agents "$AGENTS" --ranks 10 --sources 4 --mode progress \
	    --progress-s "$SECS" --progress-still "${STILL:-0}" \
	    --coordinator-pid "$CP" \
	    ${DYNPROF_ETCD_PIDS:+--store-pids $DYNPROF_ETCD_PIDS} \
	    >"$D/loadgen.out" 2>&1; then
		# Counted as failed, its reason shown; the runs go on.
		_why=$(grep -v " info: " "$D/coord.log" | grep -m1 -o \
		    'etcd does not answer\|not the leader any more' || echo other)
		echo "node_rows: run failed: $(tail -n 1 "$D/loadgen.out")"
		grep -v " info: " "$D/coord.log" | tail -n 5
		echo "$1 run=$R load=$_load failed=1 why=$(echo "$_why" | tr ' ' _)" >>"$D/results"
		kill "$CP" 2>/dev/null || true
		wait "$CP" 2>/dev/null || true
		sleep 6	# the lease of the leader gone
		return 0
	fi
	_m=$(curl -sf "http://127.0.0.1:$_hp/metrics" | awk '
	    /^dynprof_node_rows_total / { r = $2 }
	    /^dynprof_view_rows_total\{kind="stragglers"\} / { v = $2 }
	    /^dynprof_agents_silent_total / { s = $2 }
	    /^dynprof_loop_stalls_total / { st = $2 }
	    END { printf "node_rows=%s strag_rows=%s silent=%s stalls=%s",
	        r, v == "" ? 0 : v, s, st }')
	echo "$1 run=$R load=$_load $(sed -n 's/^RESULT //p' "$D/loadgen.out") $_m" | tee -a "$D/results"
	kill "$CP" 2>/dev/null || true
	wait "$CP" 2>/dev/null || true
	CP=""
	_ep=${DYNPROF_ETCD_ENDPOINTS%%,*}
	curl -sf -o /dev/null "$_ep/v3/kv/deleterange" -d "{\"key\":\"$(printf \
	    '/bench-%s-%s/' $$ "$R" | base64)\",\"range_end\":\"$(printf \
	    '/bench-%s-%s0' $$ "$R" | base64)\"}" || true
}

R=1
while [ "$R" -le "$RUNS" ]; do
	for C in $COORDS; do
		run "$C"
	done
	R=$((R + 1))
done

# Each figure's median [min - max] over the runs, per coordinator.
awk "$BENCH_AWK_V$BENCH_AWK_MED"'
{
	cs[$1] = 1
	runs[$1]++
	put("load"); put("cpu_progress_per_s"); put("store_cpu_progress_per_s")
	put("node_rows"); put("strag_rows"); put("silent"); put("failed")
}
END {
	printf "\nmedian [min - max] over the runs\n"
	for (c in cs)
		printf "%s: load %s; coordinator CPU %s s/s; etcd (3 members)" \
		    " %s s/s; node rows %s; straggler rows %s; silent %s;" \
		    " failed %d of %d\n", c,
		    med(c, "load"),
		    med(c, "cpu_progress_per_s"),
		    med(c, "store_cpu_progress_per_s"), med(c, "node_rows"),
		    med(c, "strag_rows"), med(c, "silent"),
		    n[c SUBSEP "failed"], runs[c]
}' "$D/results"
echo "raw:"
cat "$D/results"
