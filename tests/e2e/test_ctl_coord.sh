#!/bin/bash
# dynprofctl against the real coordinator (port 0, its own state dir), then with a
# real agent and two simulated ranks so that trace --wait sees windows run:
# every command's table and --json output, refusals shown as the coordinator
# gave them, an unreachable coordinator, bad arguments, tokens, timeouts.
set -eu

CTL_TEST=dynprof-ctl-coord
. "$(dirname "$0")/../support/test_ctl_lib.sh"
AGENT=$B/agent/dynprof-agent
SIM=$B/examples/dynprof-train-sim

# wait_status JOB EXPR WHAT: polls (10 s at most) until the Python EXPR holds
# over the job's summary (as d); fails saying WHAT if it never does.
wait_status() {
	local i
	for i in $(seq 1 100); do
		run --json status "$1"
		if [ "$RC" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/out" "$2"; then
			return 0
		fi
		sleep 0.1
	done
	fail "$3"
}

# wait_done JOB ID: until the coordinator has finished window ID (it does so
# on its next tick after the last rank reported).
wait_done() {
	wait_status "$1" "[w for w in d['windows'] if w['id'] == $2 and w['state'] in ('done', 'cancelled')]" \
	    "window $2 of $1 never finished"
}

# sim JOB RANK LOG [FLAG...]: a simulated rank of JOB under the agent of
# $T/agent.sock, 10 steps a second, writing under $T/traces unless the flags
# say otherwise; its output in $T/LOG.
sim() {
	local job=$1 rank=$2 log=$3
	shift 3
	"$SIM" --job "$job" --rank "$rank" --shm-dir "$T/shm" \
	    --socket "$T/agent.sock" --output-root "$T/traces" \
	    --steps-per-sec 10 -q "$@" >"$T/$log" 2>&1 &
	PIDS+=($!)
	daemon $! "$T/$log"
}

start_coord coord
export DYNPROF_COORDINATOR=http://127.0.0.1:$HTTP_PORT
unset DYNPROF_TOKEN

# --- An empty coordinator.
run jobs
expect_rc 0; expect_out "no jobs"; expect_no_err
run nodes
expect_rc 0; expect_out "no nodes"
run --json jobs
expect_rc 0; json 'd["jobs"] == []'

# --- config set / get: MindSpore's file as it is.
cat >"$T/profiler_config.json" <<'EOF'
{"start_step": 10, "stop_step": 12, "aicore_metrics": -1, "profiler_level": 1,
 "profile_framework": 1, "analyse_mode": -1, "profile_communication": false,
 "parallel_strategy": false, "with_stack": true, "data_simplification": true,
 "activities": ["CPU", "NPU"]}
EOF
run config set J "$T/profiler_config.json"
expect_rc 0
expect_out_re '^job J generation [0-9]+: window 1: steps 10-12 on all ranks$'
run config get J
expect_rc 0; expect_out '"with_stack": true'; expect_out '"activities"'
run --json config get J
expect_rc 0; json 'd["stop_step"] == 12 and d["activities"] == ["CPU", "NPU"]'
echo '{"start_step": 10, "stop_step": 12}' >"$T/same.json"
run config set J "$T/same.json"
expect_rc 0; expect_out_re ': window 1: steps 10-12 on all ranks$'
echo '{"start_step": -1, "stop_step": -1, "with_stack": true}' >"$T/none.json"
run config set J "$T/none.json"
expect_rc 0; expect_out_re '^job J generation [0-9]+: config stored, no new window$'
echo '{"start_step": 10,' >"$T/broken.json"
run config set J "$T/broken.json"
expect_rc 1; expect_err "broken.json: not JSON"

# --- trace: absolute windows, typed options, the resolved steps.
run trace J --start 100 --steps 5 --ranks 0-3,9 --option with_stack=true \
    --option profiler_level=2 --option record_shapes=true \
    --output-subdir run1
expect_rc 0; expect_out "window 2: steps 100-104 on ranks 0-3,9"
run --json trace J --start 200 --stop 210
expect_rc 0
json '(d.get("window") or d)["id"] == 3 and (d.get("window") or d)["stop_step"] == 210'
run --json status J
expect_rc 0
json '[w["id"] for w in d["windows"]] == [1, 2, 3]'
json '[w for w in d["windows"] if w["id"] == 2][0]["options"]["with_stack"] is True'
json '[w for w in d["windows"] if w["id"] == 2][0]["options"]["record_shapes"] is True'

# --- status: summary line and tables.
run status J
expect_rc 0
expect_out_re '^job J generation [0-9]+: no ranks reported yet, window 1 \[10,12\]$'
expect_out "windows:"
expect_out_re '^  2 +100-104 +scheduled +0-3,9 +0 +0 +0 +0$'

# --- cancel.
run cancel J 2
expect_rc 0; expect_out_re '^window 2 of job J: cancelled \(generation [0-9]+\)$'
run status J
expect_rc 0; expect_out_re '^  2 +100-104 +cancelled +0-3,9 +0 +0 +0 +0$'
run --json cancel J 3
expect_rc 0; json 'd["state"] == "cancelled" and d["id"] == 3'

run jobs
expect_rc 0
expect_out_re '^JOB +GENERATION +WINDOWS +PENDING +RANKS +NODES +MAX_STEP$'
expect_out_re '^J +[0-9]+ '

# --- refusals, shown as the coordinator gave them.
run trace J --start 11 --steps 1
expect_rc 1
expect_err "dynprofctl: coordinator refused: "
run --json trace J --start 11 --steps 1
expect_rc 1
json '"error" in d'
python3 - "$T/out" "$T/err" <<'EOF' || fail "stderr is not the coordinator's error"
import json, sys
d = json.load(open(sys.argv[1]))
want = "dynprofctl: coordinator refused: " + d["error"]
if "field" in d:
    want += " (field %s)" % d["field"]
got = open(sys.argv[2]).read().strip()
sys.exit(0 if got == want else 1)
EOF
run trace J --in 5 --steps 2
expect_rc 1; expect_err "dynprofctl: coordinator refused: "
run status nosuchjob
expect_rc 1; expect_err "dynprofctl: coordinator refused: "
run cancel J 999
expect_rc 1; expect_err "dynprofctl: coordinator refused: "

# --- bad arguments: exit 1 and the usage, nothing sent.
run trace J --start 5
expect_rc 1; expect_err "say how long"; expect_err "usage: dynprofctl trace JOB"
run status
expect_rc 1; expect_err "usage: dynprofctl status JOB"
run cancel J x
expect_rc 1; expect_err "WINDOW must be a window id"
run frobnicate
expect_rc 1; expect_err "unknown command: frobnicate"
run status 'bad/job'
expect_rc 1; expect_err 'invalid job id "bad/job"'
run --help
expect_rc 0; expect_out "Exit codes: 0 ok, 1 refused"
run trace --help
expect_rc 0; expect_out "--option KEY=VALUE"

# --- an unreachable coordinator: exit 2, the reason.
run --coordinator http://127.0.0.1:1 jobs
expect_rc 2
expect_err "dynprofctl: cannot reach coordinator at http://127.0.0.1:1: Connection refused"
DYNPROF_COORDINATOR=http://127.0.0.1:1 run status J
expect_rc 2; expect_err "Connection refused"

# --- several coordinators, the first hung (SIGSTOP: connections are accepted
# by the kernel, nothing answers): a read goes on to the next within 2.5 s
# and some; a write, which may have reached the hung one, is not sent again.
MAIN=$DYNPROF_COORDINATOR
start_coord hung
HUNG=http://127.0.0.1:$HTTP_PORT
HUNG_PID=${PIDS[-1]}
kill -STOP "$HUNG_PID"
t0=$(date +%s%N)
run --coordinator "$HUNG,$MAIN" jobs
took=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$HUNG_PID"
expect_rc 0; expect_out "J"
[ "$took" -lt 6000 ] || fail "the read took $took ms past a hung coordinator"
kill -STOP "$HUNG_PID"
run --coordinator "$HUNG,$MAIN" cancel J 1
kill -CONT "$HUNG_PID"
expect_rc 3; expect_err "127.0.0.1:${HUNG#http://127.0.0.1:}: no answer within 10.000 s"
run --json status J
expect_rc 0; json '[w for w in d["windows"] if w["id"] == 1 and w["state"] != "cancelled"]'
# Refused: nothing reached it, so even a write goes on to the next.
run --coordinator "http://127.0.0.1:1,$MAIN" config set J "$T/same.json"
expect_rc 0

# --- --wait with no rank to run it: exit 3 after the timeout.
run trace J --start 5000 --steps 1 --wait --timeout 1
expect_rc 3
expect_out "window 4: steps 5000-5000 on all ranks"
expect_out "window 4: waiting for targeted ranks to report"
expect_err "timed out after 1 s"
run cancel J 4
expect_rc 0

# --- tokens.
echo "s3cret-token" >"$T/admin.token"
start_coord auth --admin-token-file "$T/admin.token"
AUTH=http://127.0.0.1:$HTTP_PORT
run --coordinator "$AUTH" jobs
expect_rc 1; expect_err "dynprofctl: coordinator refused: "
expect_err "this coordinator wants a token; this request takes the operator (admin) or the viewer token: --token-file F or DYNPROF_TOKEN"
run --coordinator "$AUTH" cancel J 1
expect_rc 1; expect_err "this request takes the operator (admin) token:"
run --coordinator "$AUTH" --token-file "$T/admin.token" jobs
expect_rc 0; expect_out "no jobs"
DYNPROF_TOKEN=s3cret-token run --coordinator "$AUTH" jobs
expect_rc 0
DYNPROF_TOKEN=wrong run --coordinator "$AUTH" jobs
expect_rc 1
run --coordinator "$AUTH" --token-file "$T/nosuch" jobs
expect_rc 1; expect_err "cannot read token file"
# A token file over the limit is refused, never cut (the coordinator refuses
# the same file at start); 1023 bytes is the most a token holds.
head -c 2000 /dev/zero | tr '\0' 't' >"$T/long.token"
run --coordinator "$AUTH" --token-file "$T/long.token" jobs
expect_rc 1; expect_err "token longer than 1023 bytes"
head -c 1023 /dev/zero | tr '\0' 't' >"$T/max.token"
run --coordinator "$AUTH" --token-file "$T/max.token" jobs
expect_rc 1; expect_err "coordinator refused"

# --- token roles: the viewer reads, the operator reads and writes.
echo "v1ewer-token" >"$T/viewer.token"
AUTH_AGENT_PORT=$AGENT_PORT
start_coord roles --admin-token-file "$T/admin.token" \
    --viewer-token-file "$T/viewer.token"
ROLES=http://127.0.0.1:$HTTP_PORT
run --coordinator "$ROLES" --token-file "$T/viewer.token" jobs
expect_rc 0; expect_out "no jobs"
run --coordinator "$ROLES" --token-file "$T/viewer.token" trace V --start 5 \
    --steps 1
expect_rc 1
expect_err "dynprofctl: coordinator refused: the viewer token may only read: this request needs the operator token"
DYNPROF_TOKEN=v1ewer-token run --coordinator "$ROLES" status V
expect_rc 1; expect_err "coordinator refused: "	# no job V: nothing was made
run --coordinator "$ROLES" --token-file "$T/admin.token" trace V --start 5 \
    --steps 1
expect_rc 0; expect_out "window 1: steps 5-5 on all ranks"
DYNPROF_TOKEN=v1ewer-token run --coordinator "$ROLES" status V
expect_rc 0; expect_out_re '^job V generation [0-9]+'
DYNPROF_TOKEN=v1ewer-token run --coordinator "$ROLES" cancel V 1
expect_rc 1; expect_err "viewer token may only read"
DYNPROF_TOKEN=other run --coordinator "$ROLES" jobs
expect_rc 1; expect_err "coordinator refused: missing or wrong bearer token"
expect_err "the token given is not one this coordinator knows; this request takes the operator (admin) or the viewer token"
run --coordinator "$ROLES" jobs
expect_rc 1; expect_err "this request takes the operator (admin) or the viewer token"
DYNPROF_TOKEN=v1ewer-token run --coordinator "$ROLES" jobs
expect_rc 0
AGENT_PORT=$AUTH_AGENT_PORT	# the agent below joins the "auth" one

# --- real ranks: an agent and two simulated ranks of job S.
mkdir -p "$T/shm" "$T/traces"
"$AGENT" --coordinator "127.0.0.1:$AGENT_PORT" --node n1 \
    --socket "$T/agent.sock" --shm-dir "$T/shm" --sample-interval 100 \
    --ready-file "$T/agent.ready" >"$T/agent.log" 2>&1 &
PIDS+=($!)
AGENT_PID=$!
daemon $! "$T/agent.log"
wait_file "$T/agent.ready" $!
for r in 0 1; do
	sim S $r "sim$r.log"
done
export DYNPROF_TOKEN=s3cret-token
export DYNPROF_COORDINATOR=$AUTH
wait_status S 'd["rank_counts"]["total"] == 2 and d["steps"]["min"] > 0' \
    "ranks of S never reported steps"

# status --follow beside it: the summary, then the events as they come.
"$CTL" status S --follow >"$T/follow.out" 2>"$T/follow.err" </dev/null &
FOLLOW=$!
PIDS+=($FOLLOW)
run trace S --in 20 --steps 3 --wait --timeout 30
expect_rc 0
expect_out_re '^window 1: steps [0-9]+-[0-9]+ on all ranks$'
expect_out_re '^window 1: 2 targeted, 2 started, 2 stopped, 0 skipped, 0 failed'
expect_out "window 1: all 2 targeted ranks stopped"
for i in $(seq 1 100); do
	[ "$(grep -c ': stopped window 1 at step' "$T/follow.out")" -eq 2 ] &&
	    grep -q '^[0-9T:.-]*Z window 1 .*: done,' "$T/follow.out" && break
	sleep 0.1
done
kill "$FOLLOW"
grep -qE '^job S generation [0-9]+: 2 ranks on 1 node' "$T/follow.out" ||
    fail "status --follow: no summary"
grep -qE '^[0-9T:.-]+Z window 1 \[[0-9]+,[0-9]+\]: done, generation [0-9]+$' \
    "$T/follow.out" || { cat "$T/follow.out" >&2; fail "status --follow: no window event"; }
for r in 0 1; do
	grep -qE "^[0-9T:.-]+Z rank $r on n1: started window 1 at step [0-9]+: /.*/rank${r}_start" \
	    "$T/follow.out" || fail "status --follow: rank $r not started"
	grep -qE "^[0-9T:.-]+Z rank $r on n1: stopped window 1 at step [0-9]+$" \
	    "$T/follow.out" || fail "status --follow: rank $r not stopped"
done
[ ! -s "$T/follow.err" ] || fail "status --follow: $(cat "$T/follow.err")"
run status S
expect_rc 0
expect_out_re '^job S generation [0-9]+: 2 ranks on 1 node, step'
# UID: the uid the ranks run as (this test's).
expect_out_re "^0 +n1 +$(id -u) +[0-9]+ +done +1 +- +/.*/rank0_start[0-9]+_stop[0-9]+\$"
expect_out_re "^1 +n1 +$(id -u) +[0-9]+ +done +1 +- +/.*/rank1_start[0-9]+_stop[0-9]+\$"
ls -d "$T"/traces/rank0_start*_stop* >/dev/null 2>&1 || fail "no rank0 trace dir"

# 20 steps ahead (2 s: a loaded machine samples late), rounded up to a
# multiple of 20, followed with --json: the coordinator's
# answer, then the job's final status document.
run --json trace S --in 20 --steps 2 --roundup 20 --wait --timeout 30
expect_rc 0
python3 - "$T/out" <<'EOF' || fail "--json --wait output"
import json, sys
text = open(sys.argv[1]).read()
dec = json.JSONDecoder()
docs, i = [], 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    d, i = dec.raw_decode(text, i)
    docs.append(d)
assert len(docs) == 2, len(docs)
w = docs[0].get("window") or docs[0]
assert w["start_step"] % 20 == 0 and w["stop_step"] == w["start_step"] + 1, w
c = [x for x in docs[1]["windows"] if x["id"] == w["id"]][0]["rank_counts"]
assert c["targeted"] == 2 and c["stopped"] == 2 and c["finished"] == 2, c
assert docs[1]["rank_counts"]["done"] == 2, docs[1]["rank_counts"]
EOF

# A window whose start every live rank has passed: refused, naming the
# job's steps.
run trace S --start 1 --stop 100000 --ranks 1 --wait --timeout 30
expect_rc 1
grep -qE "coordinator refused: job S is at steps? [0-9-]+: every live rank has begun step 1 already; start after step [0-9]+ \(or force it\)" \
    "$T/err" || fail "no refusal of a start behind every rank"
# A typo of the job's name: refused with --wait, the jobs there named.
run trace Sx --start 500 --steps 1 --wait --timeout 30
expect_rc 1
expect_err "trace: no job Sx on the coordinator (jobs there are: S; did you mean S?); to wait on a window of a job whose ranks have not started yet, give --new"
run status Sx
expect_rc 1
expect_err "coordinator refused: no job Sx (field job)"
expect_err "jobs there are: S; did you mean S?"
run trace Sx --in 20 --steps 1
expect_rc 1
expect_err "check the job's name, or give start_step"
expect_err "jobs there are: S; did you mean S?"
run trace S --in 0 --steps 1
expect_rc 1
expect_err "--in 1 is the soonest"
# Ranks the job does not have: warned, refused with --wait.
run trace S --in 50 --steps 1 --ranks 0,7 --wait --timeout 30
expect_rc 1
expect_err "trace: --ranks 0,7: the highest rank job S has is 1; rank 7 is not one of its ranks (--force waits for it anyway)"
# Without --wait a new job is made, with a notice; --new says it is meant.
run trace Sy --start 500 --steps 1
expect_rc 0
expect_err "trace: job Sy is new: no rank of it has reported; the window waits for them (jobs there are: S; did you mean S?)"
run trace Sz --start 500 --steps 1 --new
expect_rc 0; expect_no_err
# Forced, it is skipped, exit 1.  (Its stop is far ahead: a window wholly
# behind every rank is finished at once.)
run trace S --start 1 --stop 100000 --ranks 1 --wait --timeout 30 --force
expect_rc 1
expect_out "window 3: steps 1-100000 on rank 1"
expect_out_re '^window 3: 1 targeted, 0 started, 0 stopped, 1 skipped, 0 failed'
expect_err "rank 1 on n1 skipped window 3"
wait_done S 3
# Wholly behind every rank: the coordinator may finish it before the rank
# sees it (missed) or the rank skips it; either way --wait ends, exit 1.
run trace S --start 1 --steps 1 --ranks 0 --wait --timeout 30 --force
expect_rc 1
grep -qE 'rank 0 on n1 (skipped window 4|did not run window 4: it was finished)' \
    "$T/err" || fail "no verdict for rank 0"
wait_done S 4

# The same node seen from its segment.
run local S --shm-dir "$T/shm"
expect_rc 0
expect_out_re '^job S, layout version [0-9]+, generation [0-9]+, agent pid [0-9]+ \(alive\)'
expect_out_re '^  [0-9]+ +[0-9]+ +yes +0 +[0-9]+ +[a-z]+ +[0-9-]+ '
expect_out_re '^  [0-9]+ +[0-9]+ +yes +1 +[0-9]+ +skipped +3 +skipped '

# A rank whose profiler cannot start (its output root lies under a file):
# failed, with the reason, exit 1.
: >"$T/not-a-dir"
sim S 2 sim2.log --output-root "$T/not-a-dir/traces"
wait_status S 'd["rank_counts"]["total"] == 3 and d["steps"]["ranks"] == 3 and d["steps"]["min"] > 0' \
    "rank 2 of S never reported a step"
run trace S --in 20 --steps 2 --ranks 2 --wait --timeout 30
expect_rc 1
expect_out_re '^window 5: 1 targeted, 0 started, 0 stopped, 0 skipped, 1 failed'
expect_err "rank 2 on n1 failed: "
run status S
expect_rc 0
expect_out_re "^2 +n1 +$(id -u) +[0-9]+ +failed +5 +.*error: .+"

# A window cancelled before 8 ranks ran it: --wait says how many did not,
# names a few of them, and how many more there are.
for r in 0 1 2 3 4 5 6 7; do
	sim M $r "simm$r.log"
done
wait_status M 'd["rank_counts"]["total"] == 8 and d["steps"]["min"] > 0' \
    "ranks of M never reported steps"
"$CTL" trace M --in 10000 --steps 1 --wait --timeout 30 >"$T/m.out" \
    2>"$T/m.err" </dev/null &
MWAIT=$!
wait_status M 'len(d["windows"]) == 1' "trace M made no window"
run cancel M 1
expect_rc 0
set +e
wait $MWAIT
RC=$?
set -e
cp "$T/m.err" "$T/err"
expect_rc 1
expect_err "window 1: of 8 targeted ranks, 8 did not run it; some of them:"
[ "$(grep -c 'did not run window 1: it was cancelled' "$T/err")" -eq 5 ] ||
    fail "not 5 ranks named"
expect_err "and 3 more did not run it (dynprofctl status M lists every rank)"
[ "$(wc -l <"$T/err")" -eq 7 ] || fail "more lines than the counts and 5 ranks"

run nodes
expect_rc 0
expect_out_re '^n1 +connected +'
expect_out_re 'S:[0-9]+'

# --in 1 lands where the coordinator hears of steps late: an agent sampling
# every 500 ms (its default) and a rank at 20 steps/s, 10 steps ahead of
# what was last reported.  The start is counted from the step the rank is
# at now, as the job's rate tells.
mkdir -p "$T/shm2"
"$AGENT" --coordinator "127.0.0.1:$AGENT_PORT" --node n2 \
    --socket "$T/agent2.sock" --shm-dir "$T/shm2" \
    --ready-file "$T/agent2.ready" >"$T/agent2.log" 2>&1 &
PIDS+=($!)
daemon $! "$T/agent2.log"
wait_file "$T/agent2.ready" $!
"$SIM" --job F --rank 0 --shm-dir "$T/shm2" --socket "$T/agent2.sock" \
    --output-root "$T/traces" --steps-per-sec 20 -q >"$T/simf.log" 2>&1 &
PIDS+=($!)
daemon $! "$T/simf.log"
wait_status F 'd["rank_counts"]["total"] == 1 and d["steps"]["min"] > 40' \
    "rank of F never reported steps"
for i in 1 2 3; do
	run trace F --in 1 --steps 2 --wait --timeout 30
	expect_rc 0; expect_out "all 1 targeted rank stopped"
done

# The node of S lost while --wait follows it: said as it happens, and in
# the progress line; a timeout then says what is missing.
"$CTL" trace S --in 300 --steps 1 --wait --timeout 8 >"$T/l.out" \
    2>"$T/l.err" </dev/null &
LWAIT=$!
wait_status S 'any(w["stop_step"] - w["start_step"] == 0 and w["state"] == "scheduled" for w in d["windows"])' \
    "trace S made no window"
# Killed: a node whose agent stopped cleanly is "left" (tests/e2e/test_left.py).
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" || true
unset "DAEMON_LOG[$AGENT_PID]"
set +e
wait $LWAIT
RC=$?
set -e
cp "$T/l.err" "$T/err"; cp "$T/l.out" "$T/out"
expect_rc 3
expect_err "trace: 1 node of job S lost (n1): the progress of its ranks is unknown until it comes back"
expect_err_line=$(grep 'timed out after 8 s' "$T/err") || fail "no timeout"
case $expect_err_line in *", 1 node lost"*) ;; *) fail "timeout line: $expect_err_line" ;; esac
# and which targeted ranks have not finished, where they were.
grep -qE "^dynprofctl: window [0-9]+: [0-9]+ targeted ranks? not finished: rank 0 on n1 \(unknown, step [0-9]+\)" \
    "$T/err" || fail "the ranks not finished are not named"

echo "PASS"
