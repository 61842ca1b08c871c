#!/bin/sh
# A large job seen through the admin API: the summary, the ranks listing, the
# event stream, at 100,000 ranks; and the status of before at 10,000.
#
#   sh bench/view.sh BUILD_DIR [BASELINE_BUILD_DIR]
#   AGENTS=10000 RANKS=10 RUNS=50 (the defaults); NOFOLLOW=1: no follower
#
# A fresh coordinator (its own state, ports picked by the kernel) with a window
# on job "view", a follower of the job's event stream, then dynprof-loadgen:
# AGENTS agent connections of RANKS ranks each, every rank starting and
# stopping the window (AGENTS x RANKS x 2 events, in flight at once) until all
# are committed and the summary counts every rank done.  Then, with those
# ranks in the coordinator: RUNS summaries (GET /v1/jobs/view), RUNS/10 whole
# listings (every page of GET /v1/jobs/view/ranks, 10,000 a page) and the
# coordinator's RSS (/proc).  The follower says how long after its commit each
# event arrived.  The same at AGENTS/10 agents (10,000 ranks) for the side by
# side, and, with BASELINE_BUILD_DIR (a build of the code before the summary,
# whose GET /v1/jobs/J lists every rank), that status at AGENTS/10 agents.
set -eu

BUILD=${1:-build}
BASE=${2:-}
AGENTS=${AGENTS:-10000}
RANKS=${RANKS:-10}
RUNS=${RUNS:-50}
LOADGEN=$BUILD/bench/dynprof-loadgen
PY=/usr/bin/python3
VIEW=$(dirname "$0")/view.py
COORD=$BUILD/server/dynprof-coordinator
. "$(dirname "$0")/lib.sh"
bench_start view

# view_start COORDINATOR: a fresh coordinator; sets CP, AP and HP.
view_start()
{
	rm -rf "$D/state" "$D/ready"
	mkdir -p "$D/state"
	"$1" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/state" \
	    --ready-file "$D/ready" -q >"$D/coord.log" 2>&1 &
	CP=$!
	_i=0
	until grep -q http_port "$D/ready" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && { echo "view: no coordinator" >&2; exit 1; }
		sleep 0.1
	done
	AP=$(sed -n 's/^agent_port=//p' "$D/ready")
	HP=$(sed -n 's/^http_port=//p' "$D/ready")
	curl -sf -X POST "http://127.0.0.1:$HP/v1/jobs/view/windows" \
	    -d '{"start_step": 100, "stop_step": 104}' >/dev/null
}

# view_load NAME AGENTS: the loadgen's agents and their ranks' window.
view_load()
{
	if ! "$LOADGEN" --coordinator "127.0.0.1:$AP" --http "127.0.0.1:$HP" \
	    --job view --agents "$2" --ranks "$RANKS" --events $((2 * RANKS)) \
	    --inflight $((2 * RANKS)) --mode events --coordinator-pid "$CP" \
	    >"$D/loadgen-$1.out" 2>&1; then
		cat "$D/loadgen-$1.out" >&2
		tail -n 5 "$D/coord.log" >&2
		exit 1
	fi
	sed -n "s/^RESULT //p" "$D/loadgen-$1.out"
}

# view_rss: the coordinator's RSS and peak, MiB.
view_rss()
{
	awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 }
	    END { printf "rss_mib=%.1f rss_peak_mib=%.1f\n", r / 1024, h / 1024 }' \
	    "/proc/$CP/status"
}

view_stop()
{
	kill "$CP" 2>/dev/null || true
	wait "$CP" 2>/dev/null || true
	CP=""
}

# view_run NAME AGENTS: the new coordinator, followed, loaded, measured.
view_run()
{
	view_start "$BUILD/server/dynprof-coordinator"
	_since=$(curl -sf "http://127.0.0.1:$HP/v1/jobs/view" |
	    $PY -c 'import json,sys; print(json.load(sys.stdin)["revision"])')
	_fp=""
	if [ -z "${NOFOLLOW:-}" ]; then
		$PY "$VIEW" follow "$HP" view "$_since" $(($2 * RANKS * 2)) \
		    "$D/follow-$1" &
		_fp=$!
		PIDS="$PIDS $_fp"
		sleep 0.5
	fi
	echo "view $1: $2 agents x $RANKS ranks ..."
	view_load "$1" "$2"
	curl -sf "http://127.0.0.1:$HP/metrics" |
	    sed -n 's/^dynprof_event_commits_total /group_commits=/p'
	if [ -n "$_fp" ]; then
		wait "$_fp" || true
		cat "$D/follow-$1"
	fi
	view_rss
	$PY "$VIEW" measure "$HP" view "$RUNS"
	view_rss
	view_stop
}

echo "view: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
    "coordinator, loadgen and clients on the same machine"
view_run large "$AGENTS"
view_run small $((AGENTS / 10))
if [ -n "$BASE" ]; then
	echo "view baseline: the status of $BASE at $((AGENTS / 10)) agents x" \
	    "$RANKS ranks ..."
	view_start "$BASE/server/dynprof-coordinator"
	view_load baseline $((AGENTS / 10))
	view_rss
	$PY "$VIEW" status "$HP" view $((RUNS / 5))
	view_stop
fi
