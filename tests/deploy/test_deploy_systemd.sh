#!/bin/sh
# The systemd units as `cmake --install` writes them (deploy/systemd):
# - systemd-analyze verify finds nothing to say about them (systemd-analyze missing
#   is a failure: scripts/deps.sh installs systemd);
# - every flag in ExecStart and in the /etc/default files is one the binary accepts;
# - the binaries start with exactly the flags the units give them, read their
#   /etc/default files' defaults, and serve (agent socket, coordinator /healthz).
set -eu
. "$(dirname "$0")/test_deploy_lib.sh"
need_binaries

PIDS=""
cleanup()
{
	rc=$?
	set +e
	stop_pids || { [ "$rc" = 0 ] && rc=1; }
	sanitizer_clean "$TMP"/dynprof-*.log || rc=1
	rm -rf "$TMP"
	exit $rc
}
make_tmp systemd cleanup

P=$TMP/prefix
cmake --install "$BUILD" --prefix "$P" > "$TMP/install.log" 2>&1 ||
    { cat "$TMP/install.log"; fail "cmake --install"; }
U=$P/lib/systemd/system
for f in "$U/dynprof-agent.service" "$U/dynprof-coordinator.service" \
    "$P/etc/default/dynprof-agent" "$P/etc/default/dynprof-coordinator" \
    "$P/lib/tmpfiles.d/dynprof.conf"; do
	[ -f "$f" ] || fail "not installed: $f"
done
if grep -n '@[A-Z_]*@' "$U"/dynprof-*.service; then
	fail "unsubstituted @VARIABLE@ in a unit"
fi
grep -qx "ExecStart=$P/bin/dynprof-agent \$DYNPROF_AGENT_OPTS" "$U/dynprof-agent.service" ||
    fail "agent ExecStart does not point at the installed binary"
grep -qx "EnvironmentFile=-$P/etc/default/dynprof-agent" "$U/dynprof-agent.service" ||
    fail "agent EnvironmentFile does not point at the installed default file"

echo "== systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1; then
	for u in dynprof-agent dynprof-coordinator; do
		out=$(systemd-analyze verify "$U/$u.service" 2>&1) ||
		    fail "systemd-analyze verify $u.service: $out"
		# Unknown keys and bad values are only warnings: refuse them too.
		if printf '%s\n' "$out" | grep "$u"; then
			fail "systemd-analyze verify $u.service has warnings"
		fi
		echo "ok: $u.service"
	done
	# It does catch a broken unit.
	sed 's/^NoNewPrivileges=/NoNewPrivilegs=/' "$U/dynprof-agent.service" > "$TMP/dynprof-agent.service"
	systemd-analyze verify "$TMP/dynprof-agent.service" 2>&1 | grep -q NoNewPrivilegs ||
	    fail "systemd-analyze verify misses an unknown key"
else
	# Debian's systemd package has it, as has every machine make test runs on.
	fail "systemd-analyze not found: units not verified (apt-get install systemd)"
fi

echo "== flags against --help"
write_facts "$TMP/facts.json"
# The long flags of ExecStart plus the uncommented and commented *_OPTS= lines.
check_flags()
{
	bin=$1
	shift
	for text in "$@"; do
		for fl in $(printf '%s\n' "$text" | grep -oE -- '--[a-z][a-z0-9-]*'); do
			python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["flags"][sys.argv[2]]; sys.exit(0 if sys.argv[3][2:] in f else 1)' \
			    "$TMP/facts.json" "$bin" "$fl" || fail "$bin has no flag $fl ($text)"
		done
	done
	echo "ok: $bin"
}
check_flags dynprof-agent "$(grep '^ExecStart=' "$U/dynprof-agent.service")" \
    "$(grep -E '^#? *DYNPROF_AGENT_OPTS=' "$P/etc/default/dynprof-agent")"
check_flags dynprof-coordinator "$(grep '^ExecStart=' "$U/dynprof-coordinator.service")" \
    "$(grep -E '^#? *DYNPROF_COORDINATOR_OPTS=' "$P/etc/default/dynprof-coordinator")"

echo "== the daemons start as the units start them"
# As the units start them (this user, not dynprof), then the test's own flags, later
# flags winning: unique ports and paths under $TMP.
run_unit()
{
	unit=$1
	shift
	start_like_unit "$U/$unit.service" "$P/etc/default/$unit" self "$TMP/$unit.log" "$@"
	PIDS="$PIDS $LAST_PID"
}
mkdir "$TMP/shm"
run_unit dynprof-coordinator --state-dir "$TMP/state" --listen 127.0.0.1:0 \
    --http 127.0.0.1:0 --ready-file "$TMP/coord.ready"
wait_for "[ -s '$TMP/coord.ready' ]" 10 || { cat "$TMP/dynprof-coordinator.log"; fail "coordinator not ready"; }
. "$TMP/coord.ready"
run_unit dynprof-agent --coordinator "127.0.0.1:$agent_port" --socket "$TMP/run/agent.sock" \
    --shm-dir "$TMP/shm" --node deploy-systemd-node --ready-file "$TMP/agent.ready"
wait_for "[ -s '$TMP/agent.ready' ]" 10 || { cat "$TMP/dynprof-agent.log"; fail "agent not ready"; }
[ -S "$TMP/run/agent.sock" ] || fail "no agent socket"
# --shm-mode 0660 of the default file reaches the socket: the group may write.
mode=$(stat -c %a "$TMP/run/agent.sock")
[ "$mode" = 660 ] || fail "socket mode $mode, want 660 (--shm-mode 0660 of the default file)"
wait_for "'$CTL' --coordinator http://127.0.0.1:$http_port nodes 2>/dev/null | grep -q deploy-systemd-node" 10 ||
    fail "the agent never showed up in dynprofctl nodes"
echo "ok: coordinator on $agent_port/$http_port, agent connected, socket mode $mode"
echo "PASS"
