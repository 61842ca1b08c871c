# Shared by tests/e2e/test_ctl_coord.sh and tests/component/test_ctl_https.sh
# (sourced, bash): a private directory T, processes in PIDS stopped at exit, and
# running dynprofctl with its stdout, stderr and exit code kept for the expect_*
# checks.
# The sourcing script names its directory's prefix in CTL_TEST.

B=${DYNPROF_BUILD_DIR:?DYNPROF_BUILD_DIR not set}
CTL=$B/ctl/dynprofctl
T=$(mktemp -d "/tmp/$CTL_TEST.XXXXXX")
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$T"
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
