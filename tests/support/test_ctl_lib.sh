# Shared by tests/e2e/test_ctl_coord.sh, tests/e2e/test_ctl_rule.sh and
# tests/component/test_ctl_https.sh (sourced, bash): a private directory T,
# processes in PIDS stopped at exit, and running dynprofctl with its stdout,
# stderr and exit code kept for the expect_* checks.  A daemon (the
# coordinator, the agent, a train-sim rank) registered with `daemon PID LOG`
# must exit 0 on SIGTERM with no sanitizer report in LOG, or the test fails.
# The sourcing script names its directory's prefix in CTL_TEST.

B=${DYNPROF_BUILD_DIR:?DYNPROF_BUILD_DIR not set}
CTL=$B/ctl/dynprofctl
COORD=$B/server/dynprof-coordinator
T=$(mktemp -d "/tmp/$CTL_TEST.XXXXXX")
PIDS=()
declare -A DAEMON_LOG=()

# daemon PID LOG: PID (also in PIDS) is a daemon writing LOG: checked at exit.
daemon() {
	DAEMON_LOG[$1]=$2
}

# sanitizer_report FILE: prints the first line a sanitizer wrote in FILE.
sanitizer_report() {
	grep -m1 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$1" 2>/dev/null
}

cleanup() {
	local rc=$? p st bad=0
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null || true
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		st=0
		wait "$p" 2>/dev/null || st=$?
		[ -n "${DAEMON_LOG[$p]:-}" ] || continue
		if [ "$st" -ne 0 ]; then
			echo "FAIL: ${DAEMON_LOG[$p]##*/} (pid $p) exited $st on SIGTERM" >&2
			bad=1
		elif sanitizer_report "${DAEMON_LOG[$p]}" >&2; then
			echo "FAIL: a sanitizer report in ${DAEMON_LOG[$p]##*/}" >&2
			bad=1
		else
			continue
		fi
		tail -40 "${DAEMON_LOG[$p]}" >&2
	done
	rm -rf "$T"
	if [ "$bad" = 1 ] && [ "$rc" = 0 ]; then
		exit 1
	fi
	exit "$rc"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	echo "--- command: ${LAST:-}" >&2
	echo "--- stdout:" >&2
	cat "$T/out" >&2 2>/dev/null || true
	echo "--- stderr:" >&2
	cat "$T/err" >&2 2>/dev/null || true
	for f in "$T"/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f (tail):" >&2
		tail -20 "$f" >&2
	done
	exit 1
}

# run ARGS...: runs dynprofctl, keeps stdout, stderr and the exit code.
run() {
	LAST="dynprofctl $*"
	set +e
	"$CTL" "$@" >"$T/out" 2>"$T/err" </dev/null
	RC=$?
	set -e
}
expect_rc() { [ "$RC" -eq "$1" ] || fail "exit $RC, expected $1"; }
expect_out() { grep -qF -- "$1" "$T/out" || fail "stdout lacks: $1"; }
expect_out_re() { grep -qE -- "$1" "$T/out" || fail "stdout lacks /$1/"; }
expect_err() { grep -qF -- "$1" "$T/err" || fail "stderr lacks: $1"; }
expect_no_err() { [ ! -s "$T/err" ] || fail "unexpected stderr"; }

# json EXPR: evaluates a Python expression over the JSON on stdout (as d).
json() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
	    "$T/out" "$1" || fail "JSON check failed: $1"
}

# wait_file FILE PID: polls (60 s at most, for a loaded machine) until FILE
# exists, PID alive.
wait_file() {
	local i
	for i in $(seq 1 1200); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || fail "process $2 died before $1"
		sleep 0.05
	done
	fail "no $1 after 60 s"
}

# start_coord NAME ARGS...: the real coordinator on 127.0.0.1, ports the
# kernel picks, state in $T/NAME, log $T/NAME.log (a daemon: checked at
# exit); sets HTTP_PORT and AGENT_PORT.
start_coord() {
	local name=$1
	shift
	mkdir -p "$T/$name"
	"$COORD" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
	    --state-dir "$T/$name" --ready-file "$T/$name.ready" \
	    --heartbeat-ms 200 "$@" >"$T/$name.log" 2>&1 &
	PIDS+=($!)
	daemon $! "$T/$name.log"
	wait_file "$T/$name.ready" $!
	HTTP_PORT=$(sed -n 's/^http_port=//p' "$T/$name.ready")
	AGENT_PORT=$(sed -n 's/^agent_port=//p' "$T/$name.ready")
	[ -n "$HTTP_PORT" ] && [ -n "$AGENT_PORT" ] || fail "bad ready file"
}
