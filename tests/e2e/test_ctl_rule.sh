#!/bin/bash
# dynprofctl rule and stragglers against the real coordinator (port 0, its own
# state dir): a rule added, listed (table and --json), refused with the
# coordinator's reason, deleted; a job's straggler thresholds set and reset;
# the job's collect setting turned off and on, its trace store set and refused.
set -eu

CTL_TEST=dynprof-ctl-rule
. "$(dirname "$0")/../support/test_ctl_lib.sh"

start_coord coord -q
export DYNPROF_COORDINATOR=http://127.0.0.1:$HTTP_PORT

# --- rules of a job
run rule add R --steps 5 --peers 1 --roundup 100 --interval 60 \
    --max-per-hour 2 --option profiler_level=1
expect_rc 0
expect_out "rule 1 of job R: on a straggler, profile it and 1 peers for 5 steps from the next multiple of 100; at most every 60 s, 2 an hour"
run rule list R
expect_rc 0
expect_out "job R: straggler lag the default, rate drop the default"
expect_out_re '^ID +PEERS +STEPS +ROUNDUP +INTERVAL_S +MAX/HOUR +FIRED +LAST_WINDOW +LAST_RANKS'
expect_out_re '^1 +1 +5 +100 +60 +2 +0 +- +-$'
run --json rule list R
expect_rc 0
json 'd["rules"][0]["steps"] == 5 and d["rules"][0]["options"]["profiler_level"] == 1'
run rule add R --peers 1
expect_rc 1; expect_err "--steps K is required"
run rule add R --steps 0
expect_rc 1; expect_err "--steps must be an integer from 1"
run rule add R --steps 5 --every 3
expect_rc 1; expect_err "unknown flag --every"
# The coordinator's bounds, said before anything is sent; a flag twice refused.
run rule add R --steps 100001
expect_rc 1; expect_err "rule add: --steps must be an integer from 1 to 100000, not \"100001\""
run rule add R --steps 100000 --peers 17
expect_rc 1; expect_err "rule add: --peers must be an integer from 0 to 16, not \"17\""
run rule add R --steps 5 --max-per-hour 61
expect_rc 1; expect_err "from 1 to 60"
run rule add R --steps 3 --steps 4
expect_rc 1; expect_err "rule add: --steps given twice"
run rule add R --steps 3 --output-subdir a --output-subdir b
expect_rc 1; expect_err "rule add: --output-subdir given twice"
run --json rule list R
expect_rc 0; json 'len(d["rules"]) == 1'
run rule list 'bad job'
expect_rc 1; expect_err "invalid job id"
run rule delete R 1
expect_rc 0; expect_out "rule 1 of job R deleted"
run rule delete R 1
expect_rc 1; expect_err "job R has no rule 1"
run rule list R
expect_rc 0; expect_out "no rules"

# --- stragglers and the job's thresholds
run stragglers R
expect_rc 0
expect_out "job R: median step -1, 0 of 0 ranks straggle on 0 nodes (lag over 50 steps or rate 50% under the job's)"
run stragglers R --lag 20
expect_rc 0; expect_out "lag over 20 steps or rate 50%"
run rule list R
expect_rc 0; expect_out "straggler lag 20, rate drop the default"
run stragglers R --rate-drop 30 --lag default
expect_rc 0; expect_out "lag over 50 steps or rate 30%"
run --json stragglers R
expect_rc 0; json 'd["rate_drop_percent"] == 30 and d["worst_ranks"] == []'
run stragglers R --busy 45
expect_rc 0; expect_out "busy time (step begin to its first collective): 0 ranks give it, median - ms; 0 over it by 45% (busy)"
run --json rule list R
expect_rc 0; json 'd["busy_percent"] == 45'
run stragglers R --busy default
expect_rc 0; expect_out "0 over it by 30% (busy)"
run stragglers R --busy 1001
expect_rc 1; expect_err "busy_percent must be an integer from 1 to 1000"
run stragglers R --lag x
expect_rc 1; expect_err "--lag must be a positive integer"
run stragglers R --lag 0
expect_rc 1; expect_err "--lag must be a positive integer"
run stragglers none-j
expect_rc 1; expect_err "no job none-j"

# --- whether the job's windows are collected
run collect R off
expect_rc 0; expect_out "job R: its windows made from now on are not collected"
run rule list R
expect_rc 0; expect_out "rate drop 30%; its windows are not collected"
run --json rule list R
expect_rc 0; json 'd["collect"] is False'
run collect R on
expect_rc 0; expect_out "job R: its windows made from now on are collected"
run --json rule list R
expect_rc 0; json 'd["collect"] is True'
run collect R maybe
expect_rc 1; expect_err "collect: say JOB on or JOB off"
run collect R
expect_rc 1; expect_err "collect: say JOB on or JOB off"
run collect none-j off
expect_rc 1; expect_err "no job none-j"

# --- the job's own trace store
run trace-store R /srv/traces/r
expect_rc 0; expect_out "job R: its windows made from now on are collected into /srv/traces/r"
run rule list R
expect_rc 0; expect_out "its windows' trace store: /srv/traces/r"
run trace-store R s3://dp-traces/r
expect_rc 0; expect_out "collected into s3://dp-traces/r"
run trace-store R /srv/../etc
expect_rc 1; expect_err 'store may not hold ".."'
run trace-store R relative
expect_rc 1; expect_err "s3://bucket/prefix or an absolute directory"
run --json rule list R
expect_rc 0; json 'd["trace_store"] == "s3://dp-traces/r"'
run trace-store R none
expect_rc 0; expect_out "collected into the agents' --trace-store"
run --json rule list R
expect_rc 0; json 'd["trace_store"] is None'
run trace-store R
expect_rc 1; expect_err "trace-store: say JOB and"
echo "ok"
