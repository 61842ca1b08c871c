#!/bin/sh
# Runs every benchmark and prints its figures (`make bench` calls it).
#
#   sh bench/run.sh BUILD_DIR        (default: build)
#
# Each section prints "== name" then its figures; the MindSpore 2.4 seed runs once,
# in the same run, so the ratios compare figures taken on the same machine at the
# same time.  Its output is kept in BUILD_DIR/bench/seed_baseline.txt for every
# section that needs it.  Exit status: non-zero if a benchmark failed.
set -u

build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
status=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "machine: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr)"

# --- the MindSpore 2.4 seed, measured as it is (same run) ---------------------
seed="$root/../shared/anchors/seed_ms24/seed_baseline.py"
seed_us=""
mkdir -p "$build/bench"
echo "== seed: MindSpore 2.4 DynamicProfilerMonitor ($seed)"
if [ -f "$seed" ] && command -v python3 >/dev/null 2>&1; then
	if python3 "$seed" >"$build/bench/seed_baseline.txt" 2>"$tmp/seed.err"; then
		grep -E '^(step_overhead_us|propagation_ms)' "$build/bench/seed_baseline.txt"
		seed_us=$(sed -n 's/^step_overhead_us \([0-9.]*\).*/\1/p' \
		    "$build/bench/seed_baseline.txt")
	else
		cat "$tmp/seed.err"
		echo "seed baseline failed: ratios not computed"
	fi
else
	echo "seed baseline not found (or no python3): skipped, ratios not computed"
	: >"$build/bench/seed_baseline.txt"
fi

# --- step_cost: the hot path of libdynprof ------------------------------------
echo "== step_cost: dynprof_step_begin + dynprof_step_end, live segment, no window due"
if [ -x "$build/bench/step_cost" ]; then
	if "$build/bench/step_cost" >"$tmp/step.out" 2>&1; then
		cat "$tmp/step.out"
		median=$(sed -n 's/^step_cost_ns median=\([0-9.]*\).*/\1/p' "$tmp/step.out")
		wall=$(sed -n 's/^step_cost_wall_ns median=\([0-9.]*\).*/\1/p' "$tmp/step.out")
		# The seed's figure is wall time (perf_counter): compare like for like
		# first, then against our CPU time.
		if [ -n "$seed_us" ] && [ -n "$median" ] && [ -n "$wall" ]; then
			awk -v ms="$seed_us" -v w="$wall" -v c="$median" 'BEGIN {
			    printf("step_cost_ratio %.0fx wall (MindSpore 2.4 %.2f us / dynprof %.2f ns per step); %.0fx against cpu %.2f ns\n",
			    ms * 1000 / w, ms, w, ms * 1000 / c, c) }'
		fi
	else
		cat "$tmp/step.out"
		echo "step_cost failed"
		status=1
	fi
	# System calls of the hot loop, counted: step_cost writes a marker before
	# and after its loop of 10^6 steps (write(-1, "dynprof-hot-loop-...")); the
	# calls strace shows between them are the loop's.
	if command -v strace >/dev/null 2>&1; then
		if strace -f -qq -o "$tmp/trace" "$build/bench/step_cost" -s 1000000; then
			n=$(awk '/dynprof-hot-loop-end/ { on = 0 }
			    on && $2 !~ /^(---|\+\+\+)/ { n++ }
			    /dynprof-hot-loop-begin/ { on = 1 } END { print n + 0 }' "$tmp/trace")
			echo "step_cost_syscalls $n in 10^6 steps (strace, between the loop's markers)"
		else
			echo "step_cost_syscalls not counted: strace could not trace (ptrace refused?)"
		fi
	else
		echo "step_cost_syscalls not counted: strace not installed"
	fi
else
	echo "no $build/bench/step_cost: build first (make build)"
	status=1
fi

echo "== python_step: the Python binding per step, beside MindSpore 2.4 in the same process"; DYNPROF_LIBRARY="$build/lib/libdynprof.so" "${DYNPROF_PYTHON:-/usr/bin/python3}" "$here/python_step.py" --seed-dir "$root/../shared/anchors/seed_ms24" || status=1

echo "== propagation: admin request -> new generation in every segment, 16 agents x 8 ranks (bench/propagation.sh)"; DYNPROF_SEED_OUTPUT="$build/bench/seed_baseline.txt" sh "$here/propagation.sh" "$build" 100 || status=1
if [ -x /usr/bin/etcd ]; then
	echo "== etcd: admin commit and propagation, the store in etcd against SQLite in the same run (bench/etcd.sh)"; sh "$here/etcd.sh" "$build" 200 || status=1
else
	echo "== etcd: skipped, no /usr/bin/etcd (scripts/deps.sh installs etcd-server)"
fi
echo "== fanout: one coordinator, 1,000 to 10,000 agents of dynprof-loadgen: fan-out, events/s, RSS, CPU (bench/fanout.sh)"; sh "$here/fanout.sh" "$build" || status=1
echo "== agent: push -> visible in the segment (n=1000), idle RSS/CPU/wakeups with 8 ranks over 10 s (bench/agent_bench.c)"; DYNPROF_BUILD_DIR="$build" "$build/bench/dynprof-agent-bench" -n 1000 -t 10 || status=1
exit $status
