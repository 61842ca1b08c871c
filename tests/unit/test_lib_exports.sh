#!/bin/sh
# libdynprof.so exports the public API and nothing else (no nanopb, no segment_*).
# usage: test_lib_exports.sh LIBDYNPROF_SO PUBLIC_HEADER
set -eu
so=$1
header=$2
syms=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
[ -n "$syms" ] || { echo "FAIL: no symbols"; exit 1; }
bad=$(echo "$syms" | grep -v '^dynprof_' || true)
[ -z "$bad" ] || { echo "FAIL: exported beyond the API:"; echo "$bad"; exit 1; }
for s in $syms; do
	grep -q "\\b$s(" "$header" || { echo "FAIL: $s is not in the header"; exit 1; }
done
for s in $(grep -o 'DYNPROF_API[^(]*(' "$header" | grep -o 'dynprof_[a-z_]*'); do
	echo "$syms" | grep -qx "$s" || { echo "FAIL: $s is not exported"; exit 1; }
done
echo "exports ok: $(echo "$syms" | wc -l) symbols"
