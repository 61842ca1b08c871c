#!/bin/sh
# One coordinator at scale over a 3-member etcd on loopback, side by side with
# SQLite in the same run: dynprof-loadgen with AGENTS connections of 10 ranks
# each (20 config changes fanned out, then every rank starting and stopping a
# window: 200,000 events at 10,000 agents), against a fresh coordinator over
# SQLite, then one over etcd (tests/support/etcd.py --members 3: its own
# temporary data directories, fsync on).  From the coordinator's /metrics
# after each run: agents closed as silent or for a bound, the loop's stalls,
# commits; the load average before each run.
#
#   sh bench/etcd_scale.sh BUILD_DIR [AGENTS]		(default 10000)
set -eu

BUILD=${1:-build}
AGENTS=${2:-10000}
HERE=$(cd "$(dirname "$0")" && pwd)
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
for b in "$COORD" "$LOADGEN"; do
	[ -x "$b" ] || { echo "etcd_scale: $b missing: build first" >&2; exit 1; }
done
if [ -z "${DYNPROF_ETCD_ENDPOINTS:-}" ]; then
	exec python3 "$HERE/../tests/support/etcd.py" --members 3 -- \
	    sh "$0" "$BUILD" "$AGENTS"
fi

. "$HERE/lib.sh"
bench_scratch etcdscale
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
LFLAGS="--ranks 10 --sources 4 --mode both"

# run NAME "COORDINATOR FLAGS": one loadgen run, its RESULT line and the
# coordinator's metrics appended to $D/results.
run()
{
	echo "etcd_scale: $1, $AGENTS agents, load average $(cut -d' ' -f1-3 /proc/loadavg)"
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
	# Over etcd, the coordinator serves once it leads.
	_i=0
	until curl -sf "http://127.0.0.1:$_hp/healthz" | grep -q leader; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && { echo "etcd_scale: no leader" >&2; exit 1; }
		sleep 0.1
	done
	# shellcheck disable=SC2086
	if ! "$LOADGEN" --coordinator "127.0.0.1:$_ap" --http "127.0.0.1:$_hp" \
	    --agents "$AGENTS" --coordinator-pid "$CP" $LFLAGS \
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
	echo "$1 $(sed -n 's/^RESULT //p' "$D/loadgen-$1.out") $_m" >>"$D/results"
	grep '^events:' "$D/loadgen-$1.out" | sed "s/^/  $1 /"
	kill "$CP" 2>/dev/null || true
	wait "$CP" 2>/dev/null || true
	CP=""
}

run sqlite ""
run etcd "--etcd-endpoints $DYNPROF_ETCD_ENDPOINTS --etcd-prefix /bench-$$/"

awk "$BENCH_AWK_V"'
BEGIN {
	printf "\n%-6s %7s %7s %15s %9s %10s %9s %13s %7s\n", "store", "agents",
	    "closed", "fan-out ms", "events/s", "200k ack s", "RSS MiB",
	    "loop stalls", "commits"
	printf "%-6s %7s %7s %15s %9s %10s %9s %13s %7s\n", "", "", "",
	    "median / max", "acked", "", "peak", "n / s", ""
}
{
	printf "%-6s %7d %7d %7s / %5s %9s %10s %9s %6s / %4s %7s\n", $1,
	    v("agents"), v("silent") + v("dropped"), v("fanout_median_ms"),
	    v("fanout_max_ms"), v("events_per_s"), v("events_acked_s"),
	    v("rss_peak_mib"), v("stalls"), v("stalled_s"), v("commits")
}' "$D/results"
echo "raw:"
cat "$D/results"
