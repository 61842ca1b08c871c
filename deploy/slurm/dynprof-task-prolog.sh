#!/bin/sh
# dynprof SLURM TaskProlog (slurm.conf: TaskProlog=/etc/slurm/dynprof-task-prolog.sh,
# or call it from yours).  slurmd runs it as the job's user before each task and applies
# the "export NAME=value" lines it prints to the task's environment: every rank then
# finds the node's agent where /etc/default/dynprof-agent put it, without the job script
# knowing.  A variable the job already set is left alone.
#
# The job id needs nothing: the library takes SLURM_JOB_ID when DYNPROF_JOB is unset,
# and the rank from SLURM_PROCID.

DEFAULTS=${DYNPROF_AGENT_DEFAULTS:-/etc/default/dynprof-agent}

# The value of flag $1 in the agent's DYNPROF_AGENT_OPTS.
agent_flag()
{
	(
		set -f
		DYNPROF_AGENT_OPTS=""
		[ -r "$DEFAULTS" ] && . "$DEFAULTS" >/dev/null 2>&1
		set -- "$1" $DYNPROF_AGENT_OPTS
		want=$1
		shift
		while [ $# -gt 0 ]; do
			case "$1" in
			"$want") [ $# -gt 1 ] && printf '%s\n' "$2"; exit 0 ;;
			"$want"=*) printf '%s\n' "${1#*=}"; exit 0 ;;
			esac
			shift
		done
	)
}

if [ -z "${DYNPROF_SHM_DIR:-}" ]; then
	v=$(agent_flag --shm-dir)
	[ -n "$v" ] && echo "export DYNPROF_SHM_DIR=$v"
fi
if [ -z "${DYNPROF_SHM_MODE:-}" ]; then
	v=$(agent_flag --shm-mode)
	[ -n "$v" ] && echo "export DYNPROF_SHM_MODE=$v"
fi
if [ -z "${DYNPROF_AGENT_SOCKET:-}" ]; then
	v=$(agent_flag --socket)
	[ -n "$v" ] && echo "export DYNPROF_AGENT_SOCKET=$v"
fi
exit 0
