#!/bin/sh
# Fan-out and events against one coordinator, at growing numbers of agents.
#
#   sh bench/fanout.sh BUILD_DIR [AGENTS ...]     (default 1000 2000 5000 10000)
#
# For each size: a fresh coordinator (its own state directory, ports picked by
# the kernel, descriptor limit raised to the hard limit), then dynprof-loadgen
# holding that many agent connections in one process: 20 config changes (admin
# request -> every agent received the new generation -> the coordinator's status
# shows every node applied it), then 20 rank events per agent (-> all
# acknowledged -> the status shows every rank's last event).  The coordinator's
# RSS and CPU come from /proc.  Prints one table, and "per 1k" columns to show
# how each figure grows.
set -eu

BUILD=${1:-build}
shift || true
SIZES=${*:-1000 2000 5000 10000}
COORD=$BUILD/server/dynprof-coordinator
LOADGEN=$BUILD/bench/dynprof-loadgen
. "$(dirname "$0")/lib.sh"
bench_start fanout
echo "fanout: descriptor limit $(ulimit -n), $(nproc) cores, coordinator and loadgen on the same machine"

for n in $SIZES; do
	echo "fanout: $n agents ..."
	bench_loadgen "$n" "$n" "" ""
	sed -n "s/^events: /  $n agents: /p" "$D/loadgen-$n.out" >>"$D/spread"
done

awk "$BENCH_AWK_V"'
BEGIN {
	printf "\n%7s %8s %17s %17s %9s %9s %17s %9s %9s %9s\n", "agents",
	    "connect", "fan-out ms", "all applied ms", "events/s", "events/s",
	    "coord RSS MiB", "coord CPU", "fan-out", "RSS", "" 
	printf "%7s %8s %17s %17s %9s %9s %17s %9s %9s %9s\n", "", "s",
	    "median / max", "median / max", "acked", "in status",
	    "idle/after/peak", "s (fo+ev)", "ms per 1k", "MiB per 1k"
}
{
	n = v("agents")
	printf "%7d %8s %8s / %6s %8s / %6s %9s %9s %5s/%5s/%5s %4s+%4s %9.1f %9.1f\n",
	    n, v("connect_s"), v("fanout_median_ms"), v("fanout_max_ms"),
	    v("applied_median_ms"), v("applied_max_ms"), v("events_per_s"),
	    v("events_per_s_status"), v("rss_idle_mib"), v("rss_mib"),
	    v("rss_peak_mib"), v("cpu_fanout_s"), v("cpu_events_s"),
	    v("fanout_median_ms") / n * 1000, v("rss_peak_mib") / n * 1000
}' "$D/results"
echo
echo "targets at 10,000 agents: fan-out < 250 ms, RSS < 256 MiB, >= 100,000 events/s"
echo "events, when each connection had all of its events acknowledged:"
cat "$D/spread"
echo "raw:"
sed 's/^[0-9]* /  /' "$D/results"
