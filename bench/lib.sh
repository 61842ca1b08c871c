# Shared by bench/fanout.sh, bench/tls.sh and bench/failover.sh (sourced): one
# dynprof-loadgen run against a fresh coordinator, and the awk function that
# reads its RESULT line.
# Needs COORD and LOADGEN; CP is the coordinator's pid while it runs.

# bench_start NAME: checks that COORD and LOADGEN are built, makes the scratch
# directory (bench_scratch) and raises the descriptor limit to its hard one.
bench_start()
{
	for _b in "$COORD" "$LOADGEN"; do
		[ -x "$_b" ] || { echo "$1: $_b missing: build first" >&2; exit 1; }
	done
	bench_scratch "$1"
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# bench_scratch NAME: D, a scratch directory removed at exit, with the
# coordinator of a run that did not finish (and the processes in PIDS).
bench_scratch()
{
	D=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-$1.XXXXXX")
	CP=""
	PIDS=""
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup()
{
	[ -n "$CP" ] && kill "$CP" 2>/dev/null && wait "$CP" 2>/dev/null
	for _p in $PIDS; do
		kill -TERM "$_p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$D"
}

# bench_coord_start BINARY "FLAGS" LOG: starts coordinator BINARY (its
# state in $D/state, ports picked by the kernel, output to LOG) as CP, and
# waits for its ready file: _ap, _hp its agent and HTTP ports.  Exits 1 if
# it does not start.
bench_coord_start()
{
	rm -f "$D/ready"
	mkdir -p "$D/state"
	# shellcheck disable=SC2086
	"$1" --listen 127.0.0.1:0 --http 127.0.0.1:0 --state-dir "$D/state" \
	    --ready-file "$D/ready" -q $2 >"$3" 2>&1 &
	CP=$!
	_i=0
	until grep -q http_port "$D/ready" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && { echo "bench: coordinator did not start" >&2; exit 1; }
		sleep 0.1
	done
	_ap=$(sed -n 's/^agent_port=//p' "$D/ready")
	_hp=$(sed -n 's/^http_port=//p' "$D/ready")
}

# bench_wait_leader: over etcd, the coordinator on _hp serves once it leads:
# waits 10 s at most for its /healthz to say so, else exits 1.
bench_wait_leader()
{
	_i=0
	until curl -sf "http://127.0.0.1:$_hp/healthz" | grep -q leader; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && { echo "bench: no leader" >&2; exit 1; }
		sleep 0.1
	done
}

# bench_loadgen NAME AGENTS "COORDINATOR FLAGS" "LOADGEN FLAGS": starts a
# coordinator (its own state, ports picked by the kernel), runs the loadgen with
# AGENTS connections, appends "NAME key=value ..." to $D/results and stops the
# coordinator; the loadgen's output stays in $D/loadgen-NAME.out.  Exits 1 on
# failure, after showing why.  BENCH_KEEP_STATE=1: the coordinator starts
# with the state directory the last run left (a restart).
bench_loadgen()
{
	_name=$1 _n=$2 _cflags=$3 _lflags=$4
	[ -n "${BENCH_KEEP_STATE:-}" ] || rm -rf "$D/state"
	bench_coord_start "$COORD" "$_cflags" "$D/coord-$_name.log"
	# shellcheck disable=SC2086
	if ! "$LOADGEN" --coordinator "127.0.0.1:$_ap" --http "127.0.0.1:$_hp" \
	    --agents "$_n" --coordinator-pid "$CP" $_lflags \
	    >"$D/loadgen-$_name.out" 2>&1; then
		cat "$D/loadgen-$_name.out" >&2
		tail -n 5 "$D/coord-$_name.log" >&2
		exit 1
	fi
	sed -n "s/^RESULT /$_name /p" "$D/loadgen-$_name.out" >>"$D/results"
	kill "$CP" 2>/dev/null || true
	wait "$CP" 2>/dev/null || true
	CP=""
}

# For awk: v(k) is the value of key k on a results line, "na" if absent.
BENCH_AWK_V='
function v(k,   i, kv) {
	for (i = 2; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == k)
			return kv[2]
	}
	return "na"
}'

# For awk, with BENCH_AWK_V: put(k) keeps key k's value of this line under
# its first field; med(s, k) is "median [min - max]" of those of s ("na":
# none).
BENCH_AWK_MED='
function put(k,   x) {
	x = v(k)
	if (x == "na" || x == "")
		return
	n[$1 SUBSEP k]++
	a[$1 SUBSEP k SUBSEP n[$1 SUBSEP k]] = x + 0
}
function med(s, k,   m, i, j, t, x) {
	m = n[s SUBSEP k]
	if (m == 0)
		return "na"
	for (i = 1; i <= m; i++)
		x[i] = a[s SUBSEP k SUBSEP i]
	for (i = 2; i <= m; i++)
		for (j = i; j > 1 && x[j - 1] > x[j]; j--) {
			t = x[j]; x[j] = x[j - 1]; x[j - 1] = t
		}
	t = (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
	return sprintf("%g [%g - %g]", t, x[1], x[m])
}'
