# Shared by the tests/deploy/test_deploy_*.sh scripts (sourced, POSIX sh).
#
# DYNPROF_SOURCE_DIR and DYNPROF_BUILD_DIR come from CTest (tests/deploy.cmake).
# Exit code 77 is a skip (SKIP_RETURN_CODE).

SRC=${DYNPROF_SOURCE_DIR:?DYNPROF_SOURCE_DIR not set}
BUILD=${DYNPROF_BUILD_DIR:?DYNPROF_BUILD_DIR not set}
AGENT=$BUILD/agent/dynprof-agent
COORD=$BUILD/server/dynprof-coordinator
CTL=$BUILD/ctl/dynprofctl

fail()
{
	echo "FAIL: $*" >&2
	exit 1
}

skip()
{
	echo "SKIP: $*"
	exit 77
}

need_binaries()
{
	for b in "$AGENT" "$COORD" "$CTL"; do
		[ -x "$b" ] || fail "$b not built"
	done
}

# Makes the test's temporary directory $TMP (/tmp/dynprof-$1.XXXXXX) and its end:
# on exit, function $2 (it removes $TMP), else just the removal; INT and TERM exit 1.
make_tmp()
{
	TMP=$(mktemp -d "/tmp/dynprof-$1.XXXXXX")
	# shellcheck disable=SC2064
	trap "${2:-rm -rf \"\$TMP\"}" EXIT
	trap 'exit 1' INT TERM
}

# Waits up to $2 seconds (default 10) for command $1 to succeed.
wait_for()
{
	_n=$(( ${2:-10} * 10 ))
	while [ "$_n" -gt 0 ]; do
		if eval "$1"; then
			return 0
		fi
		sleep 0.1
		_n=$((_n - 1))
	done
	return 1
}

# Writes, as JSON in file $1, what the binaries accept and read: the long flags of
# each binary (from its --help: flag -> whether it takes a value), the environment
# variables named in the sources of the library, daemons and binding (not tests),
# and the library's defaults.
write_facts()
{
	"$AGENT" --help > "$1.agent" 2>&1 || true
	"$COORD" --help > "$1.coord" 2>&1 || true
	"$CTL" --help > "$1.ctl" 2>&1 || true
	(cd "$SRC" && grep -rhoE '"(DYNPROF|SLURM)_[A-Z0-9_]+"' --exclude-dir=tests \
	    --include='*.c' --include='*.h' --include='*.py' agent lib common server ctl) \
	    | tr -d '"' | sort -u > "$1.env"
	python3 - "$1" <<'PY'
import json, re, sys
out = sys.argv[1]
def flags(path):
    f = {}
    for line in open(path):
        if not re.match(r"\s+-", line):
            continue
        for m in re.finditer(r"--([a-z][a-z0-9-]*)(?:[ =]([A-Z][A-Z0-9:_]*))?", line):
            f.setdefault(m.group(1), m.group(2) is not None)
    if len(f) < 3:
        sys.exit(f"{path}: no flags in --help output")
    return f
facts = {
    "flags": {"dynprof-agent": flags(out + ".agent"),
              "dynprof-coordinator": flags(out + ".coord"),
              "dynprofctl": flags(out + ".ctl")},
    "env": [l.strip() for l in open(out + ".env") if l.strip()],
    "defaults": {"socket": "/run/dynprof/agent.sock", "shmDir": "/dev/shm"},
}
agent_help = open(out + ".agent").read()
for d in facts["defaults"].values():
    if d not in agent_help:
        sys.exit(f"dynprof-agent --help no longer names the default {d}")
json.dump(facts, open(out, "w"), indent=1)
PY
}

# Stops the daemons whose pids are in $PIDS: SIGTERM to each, then waits for each.
# A daemon stops cleanly on SIGTERM: any other exit status is printed and makes
# it return 1 (a pid also in $NOCHECK, not a daemon, is stopped but not judged).
stop_pids()
{
	for _p in $PIDS; do
		kill "$_p" 2>/dev/null || true
	done
	_bad=0
	for _p in $PIDS; do
		_st=0
		wait "$_p" 2>/dev/null || _st=$?
		case " ${NOCHECK:-} " in *" $_p "*) continue ;; esac
		if [ "$_st" -ne 0 ]; then
			echo "FAIL: pid $_p exited $_st on SIGTERM" >&2
			_bad=1
		fi
	done
	return $_bad
}

# Returns 1, naming it, if a sanitizer wrote a report in one of the files given
# (daemons' logs).
sanitizer_clean()
{
	_bad=0
	for _f in "$@"; do
		if grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$_f" \
		    2>/dev/null; then
			echo "FAIL: a sanitizer report in $_f" >&2
			_bad=1
		fi
	done
	return $_bad
}

# Starts the daemon of unit file $1 in the background as systemd would start it,
# without systemd: EnvironmentFile $2 sourced, ExecStart with its $VARIABLES split on
# white space, the unit's UMask, and, when $3 is "user", the unit's User and Group.
# Output goes to $4; further arguments are appended (later flags win).  Sets LAST_PID.
start_like_unit()
{
	_unit=$1 _env=$2 _as=$3 _log=$4
	shift 4
	_line=$(sed -n 's/^ExecStart=//p' "$_unit")
	[ -n "$_line" ] || fail "no ExecStart in $_unit"
	_umask=$(sed -n 's/^UMask=//p' "$_unit")
	_pre=""
	if [ "$_as" = user ]; then
		_pre="setpriv --reuid=$(sed -n 's/^User=//p' "$_unit")"
		_pre="$_pre --regid=$(sed -n 's/^Group=//p' "$_unit") --init-groups"
	fi
	(
		set -f
		umask "${_umask:-0022}"
		. "$_env"
		eval "set -- $_pre $_line \"\$@\""
		exec "$@"
	) > "$_log" 2>&1 &
	LAST_PID=$!
}
