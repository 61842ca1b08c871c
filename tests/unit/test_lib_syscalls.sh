#!/bin/sh
# The hot path makes no system call: step_cost with 0 and with 200000 steps under
# strace -f -c must make the same number of calls, without marks and with
# dynprof_mark_comm() in every step (its clock is read through the vDSO).
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
# count FLAGS: step_cost FLAGS with 0 and 200000 steps make as many calls.
count() {
	strace -f -c -o "$tmp/s0" "$bin" "$@" -s 0 ||
	    { echo "FAIL: step_cost $* -s 0 failed under strace"; exit 1; }
	strace -f -c -o "$tmp/s1" "$bin" "$@" -s 200000 ||
	    { echo "FAIL: step_cost $* -s 200000 failed under strace"; exit 1; }
	n0=$(awk '$NF == "total" {print $4}' "$tmp/s0")
	n1=$(awk '$NF == "total" {print $4}' "$tmp/s1")
	[ -n "$n0" ] && [ -n "$n1" ] || { echo "FAIL: no strace totals"; exit 1; }
	echo "system calls${*:+ with $*}: $n0 with 0 steps, $n1 with 200000 steps"
	[ "$n0" -eq "$n1" ] || { echo "FAIL: the hot loop${*:+ with $*} made $((n1 - n0)) system calls"; exit 1; }
}
count
count -m
echo "hot loop: 0 system calls, with marks and without"
