#!/bin/sh
# Runs fuzz targets with libFuzzer, one after another (one process at a time).
#
#	tests/fuzz/run.sh [-t SECONDS | -n RUNS] [TARGET...]
#
# TARGET is frames, ranks, segment, admin, store_row, labels, standalone,
# coord_dispatch, legacy_status, agent_dispatch or segment_live (default: all).
# -t bounds each run in time (default 60 s), -n in executions.  The targets come from $BUILD (default
# build-fuzz, made with CC=clang cmake -S . -B build-fuzz -DDYNPROF_FUZZ=ON);
# each run starts from tests/fuzz/corpus/TARGET and keeps what it finds in
# $WORK/TARGET/corpus (new inputs) and $WORK/TARGET/art (crashes), its output
# in $WORK/TARGET.log (default WORK=fuzz-work).  $FUZZ_ARGS goes to
# libFuzzer as well (e.g. "-fork=1 -ignore_crashes=1" to go on after a
# crash), $FUZZ_ADMIN_EVERY to coord_dispatch and legacy_status (default
# here 16; 1 checks the admin API after every input, as make test does).  Exit status: 1 if a
# target crashed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-build-fuzz}
WORK=${WORK:-fuzz-work}
limit="-max_total_time=60"
while getopts t:n: opt; do
	case $opt in
	t) limit="-max_total_time=$OPTARG" ;;
	n) limit="-runs=$OPTARG" ;;
	*) echo "usage: $0 [-t SECONDS | -n RUNS] [TARGET...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- frames ranks segment admin store_row labels standalone \
    coord_dispatch legacy_status agent_dispatch segment_live
rc=0
for t in "$@"; do
	bin=$BUILD/tests/fuzz_$t
	if [ ! -x "$bin" ]; then
		echo "$0: no $bin (build it with -DDYNPROF_FUZZ=ON)" >&2
		exit 2
	fi
	# What each target needs: a header, the config and a slot or two take
	# 93-111 KB (segment's seeds: one_slot, two_slots); these log
	# refusals; these keep state across inputs, which libFuzzer's leak
	# check would take for leaks and scan the heap for at every input
	# (make test's sanitizer run checks their leaks at exit).
	# coord_dispatch and legacy_status ask the admin API for the status every 16th
	# input (and before each rebuild and at exit), not after every one:
	# that costs twenty times the dispatch.
	case $t in
	segment) extra="-max_len=131072 -len_control=0" ;;
	segment_live) extra="-max_len=80000 -len_control=0 -detect_leaks=0" ;;
	standalone) extra="-close_fd_mask=2" ;;
	coord_dispatch|agent_dispatch|legacy_status)
		extra="-close_fd_mask=2 -detect_leaks=0" ;;
	*) extra="" ;;
	esac
	FUZZ_ADMIN_EVERY=${FUZZ_ADMIN_EVERY:-16}
	export FUZZ_ADMIN_EVERY
	mkdir -p "$WORK/$t/corpus" "$WORK/$t/art"
	echo "== $t: $limit $extra"
	# shellcheck disable=SC2086
	"$bin" $limit $extra ${FUZZ_ARGS:-} -print_final_stats=1 \
	    -artifact_prefix="$WORK/$t/art/" "$WORK/$t/corpus" \
	    "$here/corpus/$t" > "$WORK/$t.log" 2>&1 || rc=1
	grep -E "^#[0-9]+.*(DONE|pulse|NEW)" "$WORK/$t.log" | tail -1
	grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss)" \
	    "$WORK/$t.log"
	ls "$WORK/$t/art" | sed 's/^/artifact: /'
done
exit $rc
