#!/bin/sh
# The SLURM files (deploy/slurm):
# - the TaskProlog exports the agent's --shm-dir/--shm-mode/--socket from its
#   /etc/default file, and leaves what the job set alone;
# - the Epilog removes the job's segment only: not while a rank still maps it, not for
#   a bad job id, not another job's; the agent's own mapping does not keep it;
# - the sbatch example parses, and dynprofctl accepts its trace command line;
# - every DYNPROF_* name the SLURM, systemd files and deploy/README.md use is read by
#   something (the sources of the library, daemons, dynprofctl and binding).
set -eu
. "$(dirname "$0")/test_deploy_lib.sh"
need_binaries

HOLDER=""
cleanup()
{
	[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null && wait "$HOLDER" 2>/dev/null
	rm -rf "$TMP"
}
make_tmp slurm cleanup

S=$SRC/deploy/slurm
sh -n "$S/dynprof-task-prolog.sh" || fail "task prolog: syntax"
sh -n "$S/dynprof-epilog.sh" || fail "epilog: syntax"
sh -n "$S/dynprof-legacy-dir.sh" || fail "legacy dir prolog/epilog: syntax"
bash -n "$S/train.sbatch" || fail "train.sbatch: syntax"
python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$S/train.py" ||
    fail "train.py: syntax"

echo "== DYNPROF_* names in the SLURM and systemd files and deploy/README.md"
# Each is read by the library, a daemon, dynprofctl or the binding, or is one of the
# deploy files' own (the /etc/default variables, the scripts' DYNPROF_AGENT_DEFAULTS).
write_facts "$TMP/facts"
# (@DYNPROF_...@ are the units' template variables, -DDYNPROF_... the build's
# CMake variables: neither is an environment name.)
for n in $(cat "$S"/* "$SRC"/deploy/systemd/* "$SRC/deploy/README.md" |
    grep -oE '(^|[^@A-Za-z0-9_])DYNPROF_[A-Z0-9_]+' | sed 's/^[^D]//' |
    sort -u); do
	case "$n" in
	DYNPROF_AGENT_OPTS|DYNPROF_COORDINATOR_OPTS|DYNPROF_AGENT_DEFAULTS) continue ;;
	esac
	grep -qx "$n" "$TMP/facts.env" || fail "$n is read by nothing"
done
echo ok

echo "== task prolog"
# The default file as the package installs it.
DEF=$SRC/deploy/systemd/dynprof-agent.default
out=$(env -u DYNPROF_SHM_DIR -u DYNPROF_SHM_MODE -u DYNPROF_AGENT_SOCKET \
    DYNPROF_AGENT_DEFAULTS="$DEF" sh "$S/dynprof-task-prolog.sh")
want="export DYNPROF_SHM_DIR=/dev/shm/dynprof
export DYNPROF_SHM_MODE=0660
export DYNPROF_AGENT_SOCKET=/run/dynprof/agent.sock"
[ "$out" = "$want" ] || fail "task prolog printed: $out"
out=$(DYNPROF_SHM_DIR=/mine DYNPROF_SHM_MODE=0600 DYNPROF_AGENT_SOCKET=/s \
    DYNPROF_AGENT_DEFAULTS="$DEF" sh "$S/dynprof-task-prolog.sh")
[ -z "$out" ] || fail "task prolog overrides the job's own settings: $out"
printf 'DYNPROF_AGENT_OPTS="--shm-dir=/x/y --socket /x/s"\n' > "$TMP/def"
out=$(env -u DYNPROF_SHM_DIR -u DYNPROF_SHM_MODE -u DYNPROF_AGENT_SOCKET \
    DYNPROF_AGENT_DEFAULTS="$TMP/def" sh "$S/dynprof-task-prolog.sh")
[ "$out" = "export DYNPROF_SHM_DIR=/x/y
export DYNPROF_AGENT_SOCKET=/x/s" ] || fail "task prolog with --flag=value: $out"
echo ok

echo "== epilog"
mkdir -p "$TMP/shm"
printf 'DYNPROF_AGENT_OPTS="--shm-dir %s"\n' "$TMP/shm" > "$TMP/def"
epilog()
{
	env SLURM_JOB_ID="$1" DYNPROF_AGENT_DEFAULTS="$TMP/def" sh "$S/dynprof-epilog.sh" ||
	    fail "epilog exited non-zero for job '$1'"
}
: > "$TMP/shm/dynprof.4242"
: > "$TMP/shm/dynprof.4243"
: > "$TMP/shm/dynprof.default"
# A rank that still maps the segment (python3 stands in for it).
hold()
{
	"$1" -c 'import mmap, os, sys, time
f = open(sys.argv[1], "r+b"); f.write(b"\0" * 4096); f.flush()
m = mmap.mmap(f.fileno(), 4096); f.close()
open(sys.argv[2], "w").close(); time.sleep(60)' "$2" "$TMP/held" &
	HOLDER=$!
	wait_for "[ -e '$TMP/held' ]" 10 || fail "holder did not start"
	rm -f "$TMP/held"
}
hold python3 "$TMP/shm/dynprof.4242"
epilog 4242
[ -e "$TMP/shm/dynprof.4242" ] || fail "epilog removed a segment a rank still maps"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null || true; HOLDER=""
epilog 4242
[ ! -e "$TMP/shm/dynprof.4242" ] || fail "epilog left the segment of an ended job"
[ -e "$TMP/shm/dynprof.4243" ] || fail "epilog removed another job's segment"
for bad in "" "../x" ".hidden" "a/b" "x y" "$(printf '%065d' 1)"; do
	epilog "$bad"
done
[ -e "$TMP/shm/dynprof.4243" ] && [ -e "$TMP/shm/dynprof.default" ] ||
    fail "epilog removed something for a bad job id"
# The agent's own mapping does not keep the segment.
cp "$(python3 -c "import sys; print(sys.executable)")" "$TMP/dynprof-agent"
hold "$TMP/dynprof-agent" "$TMP/shm/dynprof.4243"
epilog 4243
[ ! -e "$TMP/shm/dynprof.4243" ] || fail "the agent's mapping kept the segment"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null || true; HOLDER=""
# In the job user's own directory (a directory others may write: docs/segments.md),
# only as a directory of that uid, never through a link.
mkdir -p "$TMP/shm/dynprof-u4321" "$TMP/elsewhere-seg"
chown 4321 "$TMP/shm/dynprof-u4321"
: > "$TMP/shm/dynprof-u4321/dynprof.4244"
: > "$TMP/elsewhere-seg/dynprof.4245"
ln -s "$TMP/elsewhere-seg" "$TMP/shm/dynprof-u4322"
env SLURM_JOB_ID=4244 SLURM_JOB_UID=4321 DYNPROF_AGENT_DEFAULTS="$TMP/def" \
    sh "$S/dynprof-epilog.sh" || fail "epilog exited non-zero"
[ ! -e "$TMP/shm/dynprof-u4321/dynprof.4244" ] ||
    fail "epilog left the segment in the user's directory"
env SLURM_JOB_ID=4245 SLURM_JOB_UID=4322 DYNPROF_AGENT_DEFAULTS="$TMP/def" \
    sh "$S/dynprof-epilog.sh" || fail "epilog exited non-zero"
[ -e "$TMP/elsewhere-seg/dynprof.4245" ] ||
    fail "epilog removed a segment through a link"
echo ok

echo "== legacy job directories (prolog and epilog)"
# Made with the job's user and the legacy directory's group, 2770; removed by the
# epilog; nothing for a bad job id, without --legacy-dir, or through a link.
mkdir -p "$TMP/legacy" "$TMP/elsewhere"
chmod 0750 "$TMP/legacy"
printf 'DYNPROF_AGENT_OPTS="--coordinator c:1 --legacy-dir %s"\n' "$TMP/legacy" \
    > "$TMP/ldef"
legacy()
{
	env SLURM_JOB_ID="$1" SLURM_JOB_UID="$2" DYNPROF_AGENT_DEFAULTS="$3" \
	    sh "$S/dynprof-legacy-dir.sh" "$4" || fail "legacy $4 exited non-zero ($1)"
}
me=$(id -u)
legacy 4242 "$me" "$TMP/ldef" prolog
[ -d "$TMP/legacy/4242" ] || fail "prolog made no job directory"
[ "$(stat -c '%a %u %g' "$TMP/legacy/4242")" = "2770 $me $(stat -c %g "$TMP/legacy")" ] ||
    fail "job directory: $(stat -c '%a %u %g' "$TMP/legacy/4242")"
if [ "$me" = 0 ]; then
	legacy 4244 12345 "$TMP/ldef" prolog
	[ "$(stat -c %u "$TMP/legacy/4244")" = 12345 ] || fail "not the job's user"
fi
env SLURM_JOB_ID=4245 SLURM_JOB_UID="$me" SLURM_SCRIPT_CONTEXT=prolog_slurmd \
    DYNPROF_AGENT_DEFAULTS="$TMP/ldef" sh "$S/dynprof-legacy-dir.sh"
[ -d "$TMP/legacy/4245" ] || fail "SLURM_SCRIPT_CONTEXT=prolog_slurmd made nothing"
for bad in "" "../x" ".hidden" "a/b" "x y" "$(printf '%065d' 1)" "$(printf '4247\nx')"; do
	legacy "$bad" "$me" "$TMP/ldef" prolog
done
want="4242 4245 "
[ "$me" = 0 ] && want="4242 4244 4245 "
[ "$(ls -A "$TMP/legacy" | sort | tr '\n' ' ')" = "$want" ] ||
    fail "prolog made something for a bad job id: $(ls -A "$TMP/legacy")"
legacy 4243 "$me" "$TMP/def" prolog
[ ! -e "$TMP/legacy/4243" ] || fail "prolog without --legacy-dir made a directory"
: > "$TMP/legacy/4242/profiler_config.json"
legacy 4242 "$me" "$TMP/ldef" epilog
[ ! -e "$TMP/legacy/4242" ] || fail "epilog left the job directory"
[ -d "$TMP/legacy/4245" ] || fail "epilog removed another job's directory"
ln -s "$TMP/elsewhere" "$TMP/legacy/4246"
: > "$TMP/elsewhere/keep"
legacy 4246 "$me" "$TMP/ldef" epilog
legacy 4246 "$me" "$TMP/ldef" prolog
[ -L "$TMP/legacy/4246" ] && [ -e "$TMP/elsewhere/keep" ] ||
    fail "prolog or epilog went through a link"
echo ok

echo "== dynprofctl trace as in the docs"
# Exit 2 is "cannot reach the coordinator": the arguments were accepted.
rc=0
SLURM_JOB_ID=36199_0
"$CTL" --coordinator http://127.0.0.1:1 trace "$SLURM_JOB_ID" --in 20 --steps 5 --wait \
    > "$TMP/ctl.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat "$TMP/ctl.out"; fail "dynprofctl trace: exit $rc, want 2"; }
# A misspelt flag is a usage error (1): the check above can tell.
rc=0
"$CTL" --coordinator http://127.0.0.1:1 trace "$SLURM_JOB_ID" --inn 20 --steps 5 \
    > "$TMP/ctl.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$TMP/ctl.out"; fail "dynprofctl trace --inn: exit $rc, want 1"; }
grep -q 'dynprofctl trace "\$SLURM_JOB_ID" --in 20 --steps 5 --wait' "$S/train.sbatch" ||
    fail "train.sbatch no longer shows the trace command"
echo ok
echo "PASS"
