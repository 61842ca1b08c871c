#!/bin/sh
# The admin commit latency and the propagation to every rank's segment with
# the coordinator's state in etcd against SQLite, in the same run: the same
# dynprof-propagation trials (bench/propagation.sh, here 4 agents x 2 ranks)
# once over SQLite (WAL, synchronous=FULL, in a temporary directory) and once
# over one etcd member on loopback (tests/support/etcd.py: its own temporary
# data directory, fsync on), then the two side by side.
#
#   sh bench/etcd.sh BUILD_DIR [TRIALS]		(default 200 trials)
set -eu

BUILD=${1:-build}
TRIALS=${2:-200}
HERE=$(cd "$(dirname "$0")" && pwd)

if [ -z "${DYNPROF_ETCD_ENDPOINTS:-}" ]; then
	# Again, under an etcd member started (and stopped) for the run.
	exec python3 "$HERE/../tests/support/etcd.py" -- sh "$0" "$BUILD" "$TRIALS"
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-etcdbench.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

export PROP_NODES=4 PROP_RANKS=2 DYNPROF_SEED_OUTPUT=none
echo "== SQLite"
sh "$HERE/propagation.sh" "$BUILD" "$TRIALS" | tee "$OUT/sqlite"
echo "== etcd ($DYNPROF_ETCD_ENDPOINTS)"
PROP_COORD_FLAGS="--etcd-endpoints $DYNPROF_ETCD_ENDPOINTS --etcd-prefix /bench-$$/" \
    sh "$HERE/propagation.sh" "$BUILD" "$TRIALS" | tee "$OUT/etcd"
for s in sqlite etcd; do
	awk -v s="$s" '/^RESULT/ {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] }
		printf "etcd bench: %-6s admin commit median %.3f ms p99 %.3f ms; " \
		    "propagation median %.3f ms p99 %.3f ms\n", s,
		    r["answer_median_ms"], r["answer_p99_ms"], r["median_ms"],
		    r["p99_ms"]
	}' "$OUT/$s"
done
