#!/bin/sh
# One coordinator at scale over a 3-member etcd on loopback, side by side with
# SQLite in the same run: dynprof-loadgen with AGENTS connections of 10 ranks
# each (20 config changes fanned out, then every rank starting and stopping a
# window: 200,000 events at 10,000 agents), against a fresh coordinator over
# SQLite, then one over etcd (tests/support/etcd.py --members 3: its own
# temporary data directories, fsync on).  From the coordinator's /metrics
# after each run: agents closed as silent or for a bound, the loop's stalls,
# commits; the load average before each run.  CPU per event over the events
# phase: the coordinator's, and etcd's (its 3 members' utime + stime from
# /proc, summed).  RUNS pairs (SQLite then etcd, default 3), then each
# figure's median and range over them.
#
#   sh bench/etcd_scale.sh BUILD_DIR [AGENTS [RUNS]]	(default 10000 3)
set -eu

BUILD=${1:-build}
AGENTS=${2:-10000}
RUNS=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
. "$HERE/lib.sh"
if [ -z "${DYNPROF_ETCD_ENDPOINTS:-}" ]; then
	exec python3 "$HERE/../tests/support/etcd.py" --members 3 -- \
	    sh "$0" "$BUILD" "$AGENTS" "$RUNS"
fi

bench_start etcdscale
LFLAGS="--ranks 10 --sources 4 --mode both"

# run STORE "COORDINATOR FLAGS" "LOADGEN FLAGS": one loadgen run, its
# RESULT line and the coordinator's metrics appended to $D/results.
run()
{
	_load=$(cut -d' ' -f1 /proc/loadavg)
	echo "etcd_scale: run $R, $1, $AGENTS agents, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	rm -rf "$D/state" "$D/ready"
	mkdir -p "$D/state"
	# shellcheck disable=SC2086
	"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/state" \
	    --ready-file "$D/ready" -q $2 >"$D/coord-$1.log" 2>&1 &
	CP=$!
	_i=0
	until grep -q http_port "$D/ready" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && { echo "etcd_scale: no coordinator" >&2; exit 1; }
		sleep 0.1
	done
	_ap=$(sed -n 's/^agent_port=//p' "$D/ready")
	_hp=$(sed -n 's/^http_port=//p' "$D/ready")
	bench_wait_leader
	# shellcheck disable=SC2086
	if ! "$LOADGEN" --coordinator "127.0.0.1:$_ap" --http "127.0.0.1:$_hp" \
	    --agents "$AGENTS" --coordinator-pid "$CP" $LFLAGS $3 \
	    >"$D/loadgen-$1.out" 2>&1; then
		cat "$D/loadgen-$1.out" >&2
		grep -v " info: " "$D/coord-$1.log" | tail -n 20 >&2
		exit 1
	fi
	_m=$(curl -sf "http://127.0.0.1:$_hp/metrics" | awk '
	    /^dynprof_agents_silent_total / { s = $2 }
	    /^dynprof_agents_dropped_total / { d = $2 }
	    /^dynprof_loop_stalls_total / { st = $2 }
	    /^dynprof_loop_stalled_seconds_total / { ss = $2 }
	    /^dynprof_event_commits_total / { c = $2 }
	    END { printf "silent=%s dropped=%s stalls=%s stalled_s=%s commits=%s",
	        s, d, st, ss, c }')
	echo "$1 run=$R load=$_load $(sed -n 's/^RESULT //p' "$D/loadgen-$1.out") $_m" >>"$D/results"
	grep '^events:' "$D/loadgen-$1.out" | sed "s/^/  $1 /"
	kill "$CP" 2>/dev/null || true
	wait "$CP" 2>/dev/null || true
	CP=""
}

R=1
while [ "$R" -le "$RUNS" ]; do
	run sqlite "" ""
	run etcd "--etcd-endpoints $DYNPROF_ETCD_ENDPOINTS --etcd-prefix /bench-$$-$R/" \
	    "${DYNPROF_ETCD_PIDS:+--store-pids $DYNPROF_ETCD_PIDS}"
	# The next run starts with etcd as empty as this one did.
	_ep=${DYNPROF_ETCD_ENDPOINTS%%,*}
	curl -sf -o /dev/null "$_ep/v3/kv/deleterange" -d "{\"key\":\"$(printf \
	    '/bench-%s-%s/' $$ "$R" | base64)\",\"range_end\":\"$(printf \
	    '/bench-%s-%s0' $$ "$R" | base64)\"}" || true
	R=$((R + 1))
done

awk "$BENCH_AWK_V"'
BEGIN {
	printf "\n%-6s %3s %5s %6s %7s %15s %8s %7s %7s %7s %6s %9s %7s\n",
	    "store", "run", "load", "agents", "closed", "fan-out ms",
	    "events/s", "200k", "coord", "etcd", "RSS", "stalls", "commits"
	printf "%-6s %3s %5s %6s %7s %15s %8s %7s %7s %7s %6s %9s %7s\n",
	    "", "", "", "", "", "median / max", "acked", "ack s",
	    "us/ev", "us/ev", "MiB", "n / s", ""
}
{
	printf "%-6s %3s %5s %6d %7d %7s / %5s %8s %7s %7s %7s %6s %3s / %3s %7s\n",
	    $1, v("run"), v("load"), v("agents"), v("silent") + v("dropped"),
	    v("fanout_median_ms"), v("fanout_max_ms"), v("events_per_s"),
	    v("events_acked_s"), v("cpu_us_per_event"),
	    v("store_us_per_event"), v("rss_peak_mib"), v("stalls"),
	    v("stalled_s"), v("commits")
}' "$D/results"

# Each figure's median [min - max] over the runs, per store.
awk "$BENCH_AWK_V$BENCH_AWK_MED"'
{
	stores[$1] = 1
	put("events_per_s"); put("events_acked_s"); put("fanout_median_ms")
	put("fanout_max_ms"); put("cpu_us_per_event")
	put("store_us_per_event"); put("rss_peak_mib")
}
END {
	printf "\nmedian [min - max] over the runs\n"
	for (s in stores) {
		printf "%s: events/s %s; 200k acked in %s s; fan-out median %s ms," \
		    " max %s ms; coordinator %s us/event", s,
		    med(s, "events_per_s"), med(s, "events_acked_s"),
		    med(s, "fanout_median_ms"), med(s, "fanout_max_ms"),
		    med(s, "cpu_us_per_event")
		if (s == "etcd")
			printf ", etcd (3 members) %s us/event",
			    med(s, "store_us_per_event")
		printf "; RSS peak %s MiB\n", med(s, "rss_peak_mib")
	}
}' "$D/results"
echo "raw:"
cat "$D/results"
