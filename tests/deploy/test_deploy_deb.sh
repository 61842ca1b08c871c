#!/bin/sh
# The Debian packages, installed into this machine for real:
# - cpack -G DEB packs the build tree; dpkg -i installs every package it made;
# - the maintainer scripts made the dynprof user and group and the segment directory
#   /dev/shm/dynprof (3770 dynprof:dynprof);
# - a C program builds against the installed header, library and pkg-config file;
# - the installed coordinator and agent run as their units run them (under systemd
#   when it is running, else directly as user dynprof with the flags of their
#   /etc/default files, on ports the kernel picks);
# - a rank runs as an unprivileged user whose only link to dynprof is the group
#   (nobody + group dynprof): it creates its segment in its own directory
#   /dev/shm/dynprof/dynprof-u<uid> and reports to the agent's socket; the
#   installed dynprofctl sees the node, the job and the rank, schedules a window
#   with trace --wait, and the rank writes its trace;
# - dpkg --purge removes everything: no file of the packages is left in /usr or /etc,
#   nor the state directory.
# Skips (with the reason) when not root, without dpkg/cpack, in sanitizer builds,
# or when dynprof is already installed here.  Cleans up on failure too.
set -eu
. "$(dirname "$0")/test_deploy_lib.sh"

[ "$(id -u)" = 0 ] || skip "not root: dpkg -i needs root"
for c in dpkg dpkg-deb cpack setpriv flock lintian; do
	command -v "$c" >/dev/null 2>&1 || fail "$c not found (Debian's, and cmake's cpack)"
done
[ -z "${DYNPROF_SANITIZED:-}" ] ||
    skip "sanitizer build: the packages are tested from the plain build"
need_binaries

# One run at a time on this machine, whichever build tree it comes from.  What
# the run starts in the background gets fd 9 closed (no_lock): a run killed
# with its daemons left would keep the next one waiting.
LOCK=/var/lock/dynprof-deb-test.lock
exec 9>"$LOCK"
flock -w 300 9 || fail "another test_deploy_deb holds $LOCK"
# Fails if process $1 ($2) holds an fd on the lock.
no_lock()
{
	_lock=$(readlink -f "$LOCK")
	for _fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$_fd" 2>/dev/null)" != "$_lock" ] ||
		    fail "$2 (pid $1) holds $LOCK: a killed run would leave it held"
	done
}

# Runs that die without cleaning up (SIGKILL at a timeout) leave this marker; the
# next run may then remove what that run installed.  Without it, dynprof files on this
# machine are someone's: leave them, skip.
MARK=/var/tmp/dynprof-deb-test.running
PKGS_ALL="dynprof libdynprof0 libdynprof-dev dynprof-agent dynprof-coordinator dynprofctl python3-dynprof"
installed()
{
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'ok installed\|config-files'
}
# Purges those of packages $@ that are installed (or left configured), together.
purge_all()
{
	_p=""
	for _n in "$@"; do
		if installed "$_n"; then
			_p="$_p $_n"
		fi
	done
	if [ -n "$_p" ]; then
		# shellcheck disable=SC2086
		dpkg --purge $_p >/dev/null 2>&1 || echo "dpkg --purge$_p failed" >&2
	fi
}
if [ -e "$MARK" ]; then
	echo "cleaning up after an interrupted run"
	purge_all $PKGS_ALL
	for p in $(cat "$MARK"); do
		kill "$p" 2>/dev/null || true
	done
	rm -rf /var/lib/dynprof /run/dynprof /dev/shm/dynprof
else
	for p in $PKGS_ALL; do
		if installed "$p"; then
			skip "package $p is installed on this machine: not touching it"
		fi
	done
	for f in /var/lib/dynprof /etc/default/dynprof-agent /etc/default/dynprof-coordinator \
	    /usr/bin/dynprof-agent /usr/bin/dynprof-coordinator; do
		if [ -e "$f" ]; then
			skip "$f exists on this machine: not touching it"
		fi
	done
	# An agent started by hand without --socket makes /run/dynprof: only a
	# directory with something in it is someone's.
	for f in /run/dynprof /dev/shm/dynprof; do
		if [ -n "$(ls -A "$f" 2>/dev/null)" ]; then
			skip "$f is not empty on this machine: not touching it"
		fi
	done
fi
NEW_USER=0
getent passwd dynprof >/dev/null || NEW_USER=1
: > "$MARK"

PIDS=""
NAMES=""
SYSTEMD=0
[ -d /run/systemd/system ] && SYSTEMD=1
cleanup()
{
	rc=$?
	set +e
	if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
		for l in coordinator agent rank; do
			[ -s "$TMP/$l.log" ] && { echo "--- $l.log"; tail -n 30 "$TMP/$l.log"; }
		done
	fi
	if [ "$SYSTEMD" = 1 ]; then
		systemctl stop dynprof-agent dynprof-coordinator >/dev/null 2>&1
	fi
	stop_pids || { [ "$rc" = 0 ] && rc=1; }
	# All at once: dpkg orders them by their dependencies.
	purge_all $NAMES
	if [ "$NEW_USER" = 1 ] && getent passwd dynprof >/dev/null; then
		userdel dynprof 2>/dev/null
		groupdel dynprof 2>/dev/null
	fi
	rm -rf "$TMP" /var/lib/dynprof /run/dynprof /dev/shm/dynprof
	# The marker stays while a package could not be purged: the next run does it.
	for n in $NAMES; do
		if installed "$n"; then
			echo "$n is still installed" >&2
			exit 1
		fi
	done
	rm -f "$MARK"
	exit "$rc"
}
make_tmp deb cleanup
chmod 0755 "$TMP"

echo "== cpack"
(cd "$BUILD" && cpack -G DEB -B "$TMP/pkg") > "$TMP/cpack.log" 2>&1 ||
    { cat "$TMP/cpack.log"; fail "cpack -G DEB"; }
DEBS=$(ls "$TMP"/pkg/*.deb)
for d in $DEBS; do
	n=$(dpkg-deb -f "$d" Package)
	NAMES="$NAMES $n"
	echo "$(basename "$d"): $(dpkg-deb -f "$d" Depends)"
	dpkg-deb -c "$d" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' >> "$TMP/files"
done
# Debian's checks: no error (a copyright file and a changelog in each package, the
# library in the multiarch directory with its ldconfig trigger, stripped programs).
lintian --no-tag-display-limit $DEBS > "$TMP/lintian.log" 2>&1 || true
if grep '^E: ' "$TMP/lintian.log"; then
	fail "lintian found errors in the packages"
fi
echo "lintian: $(grep -c '^W: ' "$TMP/lintian.log") warnings, no error"
grep -qx /usr/lib/x86_64-linux-gnu/libdynprof.so.0 "$TMP/files" ||
    [ "$(dpkg --print-architecture)" != amd64 ] ||
    fail "the library is not in the multiarch directory /usr/lib/x86_64-linux-gnu"
for n in $NAMES; do
	grep -qx "/usr/share/doc/$n/copyright" "$TMP/files" || fail "$n has no copyright file"
done
grep -qx /usr/bin/dynprof-agent "$TMP/files" || fail "no package has the agent"
grep -qx /usr/bin/dynprof-coordinator "$TMP/files" || fail "no package has the coordinator"
grep -qx /usr/bin/dynprofctl "$TMP/files" || fail "no package has dynprofctl"
# The binding where Debian's python3 (any 3.X) looks under /usr.
grep -qx /usr/lib/python3/dist-packages/dynprof/__init__.py "$TMP/files" ||
    fail "the Python package is not in /usr/lib/python3/dist-packages"
# dynprofctl alone, for operators' machines: its own package.
ctl_deb=$(ls "$TMP"/pkg/dynprofctl_*.deb 2>/dev/null) ||
    fail "no dynprofctl package"
[ "$(dpkg-deb -c "$ctl_deb" | awk '$1 !~ /^d/ { print $6 }' | sort | tr '\n' ' ')" = \
    "./usr/bin/dynprofctl ./usr/share/doc/dynprofctl/changelog.Debian.gz ./usr/share/doc/dynprofctl/copyright ./usr/share/man/man1/dynprofctl.1.gz " ] ||
    fail "dynprofctl's package holds more than dynprofctl, its man page and its copyright and changelog"
# The scripts the deployment guide runs.
for f in tls/mkcerts.sh slurm/dynprof-task-prolog.sh slurm/dynprof-epilog.sh \
    slurm/dynprof-legacy-dir.sh; do
	grep -qx "/usr/share/dynprof/$f" "$TMP/files" || fail "no package has $f"
done
# A man page for each program, made from its --help.
for p in dynprofctl dynprof-agent dynprof-coordinator; do
	grep -qx "/usr/share/man/man1/$p.1.gz" "$TMP/files" || fail "no man page of $p"
done
grep -qx /usr/lib/systemd/system/dynprof-agent.service "$TMP/files" || fail "no agent unit"
grep -q '/include/dynprof.h$' "$TMP/files" || fail "no package has dynprof.h"
grep -q '/pkgconfig/dynprof.pc$' "$TMP/files" || fail "no package has dynprof.pc"
# Nothing `cmake --install` installs is missing from the packages (install() rules
# without a COMPONENT are left out of them: deploy/cpack.cmake).
cmake --install "$BUILD" --prefix "$TMP/all" > "$TMP/install.log" 2>&1 ||
    { cat "$TMP/install.log"; fail "cmake --install"; }
# (Under another prefix the binding goes to python3.X; under /usr, packed, to
# python3: lib/python/CMakeLists.txt.)
(cd "$TMP/all" && find . ! -type d) | sed 's|^\./|/usr/|; s|^/usr/etc/|/etc/|' |
    sed 's|^/usr/lib/python3\.[0-9]*/dist-packages/|/usr/lib/python3/dist-packages/|' |
    sort > "$TMP/want"
sort "$TMP/files" > "$TMP/have"
missing=$(comm -23 "$TMP/want" "$TMP/have")
[ -z "$missing" ] || fail "installed by cmake --install but in no package: $missing"
if grep -q '^/usr/local' "$TMP/files"; then
	grep '^/usr/local' "$TMP/files"
	fail "packaged files under /usr/local"
fi

echo "== dpkg -i"
DEBIAN_FRONTEND=noninteractive dpkg --force-confnew -i $DEBS \
    < /dev/null > "$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg -i"; }
for n in $NAMES; do
	installed "$n" || fail "$n not installed"
done
getent passwd dynprof >/dev/null || fail "postinst made no user dynprof"
getent group dynprof >/dev/null || fail "postinst made no group dynprof"
st=$(stat -c '%a %U %G' /dev/shm/dynprof) || fail "postinst made no /dev/shm/dynprof"
[ "$st" = "3770 dynprof dynprof" ] || fail "/dev/shm/dynprof is $st"
grep -qx 'ExecStart=/usr/bin/dynprof-agent $DYNPROF_AGENT_OPTS' \
    /usr/lib/systemd/system/dynprof-agent.service || fail "agent unit ExecStart"
/usr/bin/dynprof-agent --version > /dev/null || fail "installed agent does not run"
echo "ok: installed$NAMES; user, group and /dev/shm/dynprof made"

echo "== the library from its installed header and pkg-config file"
cat > "$TMP/v.c" <<'C'
#include <stdio.h>
#include <dynprof.h>
int
main(void)
{
	printf("%s\n", dynprof_version());
	return (0);
}
C
# shellcheck disable=SC2046
cc -o "$TMP/v" "$TMP/v.c" $(pkg-config --cflags --libs dynprof) 2> "$TMP/cc.log" ||
    { cat "$TMP/cc.log"; pkg-config --cflags --libs dynprof; fail "cannot build against the installed library"; }
v=$("$TMP/v") || fail "program linked to the installed library does not run"
echo "ok: dynprof_version() = $v, $(pkg-config --cflags --libs dynprof)"

# start_daemon NAME DIR: dynprof-NAME as its unit runs it: by systemd, else
# as systemd would (its StateDirectory or RuntimeDirectory DIR, then User,
# UMask, EnvironmentFile, ExecStart), its output in $TMP/NAME.log.
start_daemon()
{
	if [ "$SYSTEMD" = 1 ]; then
		systemctl start "dynprof-$1" || fail "systemctl start dynprof-$1"
		return
	fi
	install -d -m 0750 -o dynprof -g dynprof "$2"
	start_like_unit "/usr/lib/systemd/system/dynprof-$1.service" \
	    "/etc/default/dynprof-$1" user "$TMP/$1.log" 9>&-
	PIDS="$PIDS $LAST_PID"
	no_lock "$LAST_PID" "dynprof-$1"
	echo "$PIDS" > "$MARK"
}

echo "== daemons, as their units run them"
# The operator's step: the flags in /etc/default.  Ports 0: the kernel picks, the
# ready files say which.
cat > /etc/default/dynprof-coordinator <<EOF
DYNPROF_COORDINATOR_OPTS="--listen 127.0.0.1:0 --http 127.0.0.1:0 --ready-file /var/lib/dynprof/ready"
EOF
start_daemon coordinator /var/lib/dynprof
wait_for "[ -s /var/lib/dynprof/ready ]" 15 ||
    { cat "$TMP/coordinator.log" 2>/dev/null; fail "coordinator not ready"; }
. /var/lib/dynprof/ready
[ -f /var/lib/dynprof/dynprof.db ] || fail "no /var/lib/dynprof/dynprof.db"
[ "$(stat -c %U /var/lib/dynprof/dynprof.db)" = dynprof ] ||
    fail "the coordinator does not run as dynprof"

cat > /etc/default/dynprof-agent <<EOF
DYNPROF_AGENT_OPTS="--coordinator 127.0.0.1:$agent_port --node deb-test-node --socket /run/dynprof/agent.sock --shm-dir /dev/shm/dynprof --shm-mode 0660 --ready-file /run/dynprof/ready"
EOF
start_daemon agent /run/dynprof
wait_for "[ -s /run/dynprof/ready ]" 15 ||
    { cat "$TMP/agent.log" 2>/dev/null; fail "agent not ready"; }
st=$(stat -c '%a %U %G' /run/dynprof/agent.sock)
[ "$st" = "660 dynprof dynprof" ] || fail "agent socket is $st"

CTL="/usr/bin/dynprofctl --coordinator http://127.0.0.1:$http_port"
wait_for "$CTL nodes 2>/dev/null | grep -q deb-test-node" 15 ||
    { $CTL nodes; fail "the agent never connected"; }
echo "ok: coordinator ($agent_port, $http_port) and agent run as dynprof; dynprofctl nodes:"
$CTL nodes

echo "== a rank in group dynprof, not user dynprof"
# nobody, with dynprof as its only extra group, as a training user added to the
# group, runs the example of the docs (deploy/slurm/train.py) on the installed
# library: through the installed Python binding when a package has it, else through
# the binding of this tree.
# 5 steps a second: "--in 20" is 4 s ahead, far more than the agent's progress
# sampling (500 ms) lags behind the rank, even on a loaded machine.
JOB=deb-test-job
mkdir -m 1777 "$TMP/out"
cp "$SRC/deploy/slurm/train.py" "$TMP/train.py"
PYPATH="" LIBRARY=""
if ! grep -q '/dynprof/__init__.py$' "$TMP/files"; then
	echo "(no Python package among the packages: the binding of this tree, on the installed library)"
	mkdir "$TMP/py"
	cp -r "$SRC/lib/python/dynprof" "$TMP/py/"
	PYPATH=$TMP/py
	LIBRARY=$(grep -m1 '/libdynprof\.so\.0$' "$TMP/files") || fail "no libdynprof.so.0 packaged"
fi
env -i PATH=/usr/bin:/bin DYNPROF_JOB=$JOB RANK=0 DYNPROF_SHM_DIR=/dev/shm/dynprof \
    DYNPROF_SHM_MODE=0660 DYNPROF_OUTPUT_ROOT="$TMP/out" TRAIN_STEPS=3000 \
    STEP_SECONDS=0.2 PYTHONPATH="$PYPATH" DYNPROF_LIBRARY="$LIBRARY" \
    setpriv --reuid=nobody --regid=nogroup --groups=dynprof \
    /usr/bin/python3 "$TMP/train.py" > "$TMP/rank.log" 2>&1 9>&- &
RANK_PID=$!
no_lock "$RANK_PID" "the rank"
# A Python rank without a SIGTERM handler dies of the signal: not judged.
NOCHECK=$RANK_PID
PIDS="$PIDS $RANK_PID"
echo "$PIDS" > "$MARK"
# The group may write /dev/shm/dynprof: the rank's segments are in its own
# directory there, which the group may enter and never write (docs/segments.md).
UDIR=/dev/shm/dynprof/dynprof-u$(id -u nobody)
wait_for "[ -e $UDIR/dynprof.$JOB ]" 10 ||
    { cat "$TMP/rank.log"; fail "the rank made no segment in $UDIR"; }
st=$(stat -c '%a %U %G' "$UDIR/dynprof.$JOB")
[ "$st" = "660 nobody dynprof" ] || fail "segment is $st, want 660 nobody dynprof"
st=$(stat -c '%a %U %G' "$UDIR")
[ "$st" = "2750 nobody dynprof" ] || fail "$UDIR is $st, want 2750 nobody dynprof"
wait_for "$CTL status $JOB 2>/dev/null | grep -q deb-test-node" 15 ||
    { $CTL status $JOB; cat "$TMP/rank.log" "$TMP/agent.log" 2>/dev/null; fail "the rank never showed up"; }
# Relative windows need the job's progress: wait for its first reported step.
has_step()
{
	$CTL --json jobs 2>/dev/null | python3 -c 'import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(j.get("job") == sys.argv[1] and isinstance(j.get("max_step"), int)
    and j["max_step"] >= 0 for j in d.get("jobs", [])) else 1)' "$JOB"
}
wait_for has_step 15 || { $CTL jobs; fail "no progress of $JOB reached the coordinator"; }
$CTL jobs
echo "== dynprofctl trace $JOB --in 20 --steps 5 --wait"
timeout 60 $CTL trace $JOB --in 20 --steps 5 --wait --timeout 45 > "$TMP/trace.log" 2>&1 ||
    { cat "$TMP/trace.log" "$TMP/rank.log"; fail "dynprofctl trace --wait"; }
cat "$TMP/trace.log"
$CTL status $JOB
wait_for "ls '$TMP'/out/rank0_start*_stop*/step*.trace >/dev/null 2>&1" 10 ||
    { cat "$TMP/rank.log"; fail "the rank wrote no trace"; }
# The window's steps, each once: the profiler ran exactly over them.
d=$(ls -d "$TMP"/out/rank0_start*_stop*)
a=${d##*_start}; a=${a%%_stop*}; b=${d##*_stop}
got=$(ls "$d" | sed 's/^step//; s/\.trace$//' | sort -n | tr '\n' ' ')
want=$(seq "$a" "$b" | tr '\n' ' ')
[ "$got" = "$want" ] || fail "traced steps $got, want $want"
echo "ok: $(basename "$d"): steps $got"

echo "== stop and purge"
kill "$RANK_PID" 2>/dev/null || true
if [ "$SYSTEMD" = 1 ]; then
	systemctl stop dynprof-agent dynprof-coordinator
else
	stop_pids || fail "a daemon did not exit 0 on SIGTERM"
fi
PIDS=""
# shellcheck disable=SC2086
dpkg --purge $NAMES > "$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log"; fail "dpkg --purge"; }
for n in $NAMES; do
	if installed "$n"; then
		fail "$n still installed"
	fi
done
left=""
while read -r f; do
	case "$f" in
	/usr/*|/etc/*) ;;
	*) continue ;;
	esac
	# Directories the packages share with the system stay.
	if [ -e "$f" ] && ! [ -d "$f" ]; then
		left="$left $f"
	fi
done < "$TMP/files"
[ -z "$left" ] || fail "left after purge:$left"
[ ! -e /var/lib/dynprof ] || fail "purge left /var/lib/dynprof"
[ ! -e /etc/default/dynprof-agent ] || fail "purge left /etc/default/dynprof-agent"
[ ! -e /dev/shm/dynprof ] || fail "purge left /dev/shm/dynprof: $(ls -A /dev/shm/dynprof)"
[ ! -e /run/dynprof ] || fail "purge left /run/dynprof"
echo "ok: nothing left"
echo "PASS"
