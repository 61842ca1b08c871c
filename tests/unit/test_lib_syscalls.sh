#!/bin/sh
# The hot path makes no system call: step_cost with 0 and with 200000 steps under
# strace -f -c must make the same number of calls.  Skipped (77) without strace
# or when ptrace is refused.
# usage: test_lib_syscalls.sh STEP_COST_BINARY
set -u
bin=$1
command -v strace >/dev/null 2>&1 || { echo "strace not installed: skipped"; exit 77; }
# LeakSanitizer cannot run under ptrace: off for these runs of a sanitized build.
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
export ASAN_OPTIONS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-sys-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
strace -f -c -o "$tmp/s0" "$bin" -s 0 || { echo "strace failed: skipped"; exit 77; }
strace -f -c -o "$tmp/s1" "$bin" -s 200000 || { echo "FAIL: step_cost -s failed"; exit 1; }
n0=$(awk '$NF == "total" {print $4}' "$tmp/s0")
n1=$(awk '$NF == "total" {print $4}' "$tmp/s1")
[ -n "$n0" ] && [ -n "$n1" ] || { echo "FAIL: no strace totals"; exit 1; }
echo "system calls: $n0 with 0 steps, $n1 with 200000 steps"
[ "$n0" -eq "$n1" ] || { echo "FAIL: the hot loop made $((n1 - n0)) system calls"; exit 1; }
echo "hot loop: 0 system calls"
