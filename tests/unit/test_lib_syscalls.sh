#!/bin/sh
# The hot path makes no system call: step_cost -s 200000 under strace, without
# marks, with dynprof_mark_comm() in every step, and with dynprof_poll()
# instead of steps (-p, a time window ahead), makes none between the
# markers it writes around its loop of steps (write(-1, "dynprof-hot-loop-
# begin"/"-end")); what the opening and closing of the handle make is outside
# them, and not counted.
# Marks read the clock (CLOCK_MONOTONIC) through the vDSO; a machine whose clock
# source has no vDSO reading (seen on some virtual machines) makes each read a
# system call: step_cost -c probes that first, and the check with marks is then
# skipped (77) with the reason, after the check without marks passed (polls
# read the clock too: skipped with them).
# strace is part of make test (scripts/deps.sh): without it, a failure.
# Skipped (77) only when ptrace itself is refused to a user that is not root
# (as root, also a failure unless DYNPROF_E2E_ALLOW_SKIP=1); step_cost failing
# under strace is a failure.
# usage: test_lib_syscalls.sh STEP_COST_BINARY
set -u
bin=$1
command -v strace >/dev/null 2>&1 ||
    { echo "FAIL: strace not installed (make deps-test, or scripts/deps.sh)"; exit 1; }
# LeakSanitizer cannot run under ptrace: off for these runs of a sanitized build.
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
export ASAN_OPTIONS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-sys-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
if ! strace -f -o /dev/null true >"$tmp/probe" 2>&1; then
	if [ "$(id -u)" -eq 0 ] && [ "${DYNPROF_E2E_ALLOW_SKIP:-0}" != 1 ]; then
		echo "FAIL: root, yet strace cannot trace: $(cat "$tmp/probe")"
		exit 1
	fi
	echo "SKIP: strace cannot trace here: $(cat "$tmp/probe")"
	exit 77
fi
# inside ARGS...: runs step_cost ARGS under strace; prints the system calls it
# made between its markers, one per line.  Exits 1 if the markers are missing.
inside() {
	strace -f -qq -o "$tmp/trace" "$bin" "$@" ||
	    { echo "FAIL: step_cost $* failed under strace"; exit 1; }
	grep -q 'dynprof-hot-loop-begin' "$tmp/trace" &&
	    grep -q 'dynprof-hot-loop-end' "$tmp/trace" ||
	    { echo "FAIL: step_cost $* wrote no markers"; exit 1; }
	# Lines are "PID call(...)"; signals ("--- ...") are not calls.
	awk '/dynprof-hot-loop-end/ { on = 0 }
	    on && $2 !~ /^(---|\+\+\+)/ { print }
	    /dynprof-hot-loop-begin/ { on = 1 }' "$tmp/trace"
}
# count ARGS...: step_cost ARGS -s 200000 makes no system call in its loop.
count() {
	inside "$@" -s 200000 >"$tmp/calls" || exit 1
	n=$(wc -l <"$tmp/calls")
	echo "system calls in 200000 steps${*:+ with $*}: $n"
	if [ "$n" -ne 0 ]; then
		echo "FAIL: the hot loop${*:+ with $*} made $n system calls:"
		sed 's/^[0-9]* *//; s/(.*//' "$tmp/calls" | sort | uniq -c
		head -5 "$tmp/calls"
		exit 1
	fi
}
count
inside -c 100000 >"$tmp/clock" || exit 1
if [ -s "$tmp/clock" ]; then
	src=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource \
	    2>/dev/null || echo unknown)
	echo "SKIP (marks): on this machine reading the clock is a system call" \
	    "($(wc -l <"$tmp/clock") for 100000 reads, clock source $src):" \
	    "the hot loop without marks made none"
	exit 77
fi
count -m
count -p
echo "hot loop: 0 system calls, with marks and without, and in polls"
