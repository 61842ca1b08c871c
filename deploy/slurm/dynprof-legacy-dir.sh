#!/bin/sh
# dynprof SLURM Prolog and Epilog for legacy jobs: MindSpore and torch_npu jobs that use
# their own dynamic profiler, served by the agent through the config file they poll
# (docs/legacy.md).  In slurm.conf (SLURM 20.11 or later tells the two apart with
# SLURM_SCRIPT_CONTEXT):
#   Prolog=/etc/slurm/dynprof-legacy-dir.sh
#   Epilog=/etc/slurm/dynprof-legacy-dir.sh
# or from your own: dynprof-legacy-dir.sh prolog | dynprof-legacy-dir.sh epilog.
#
# slurmd runs it as root on every node of the job, with SLURM_JOB_ID and SLURM_JOB_UID
# set.  The prolog makes <legacy-dir>/<job id>, where <legacy-dir> is the agent's
# --legacy-dir from /etc/default/dynprof-agent: owned by the job's user, in the group
# of <legacy-dir> (the agent's), mode 2770.  The job points its profiler there:
#   MindSpore  DynamicProfilerMonitor(cfg_path=<legacy-dir>/$SLURM_JOB_ID, ...)
#   torch_npu  export PROF_CONFIG_PATH=<legacy-dir>/$SLURM_JOB_ID
# The epilog removes that directory (only it, never through a symbolic link); the
# agent then stops serving the job.  Without --legacy-dir, or for a job id dynprof
# would refuse, it does nothing.  Never fails the job.

DEFAULTS=${DYNPROF_AGENT_DEFAULTS:-/etc/default/dynprof-agent}
job=${SLURM_JOB_ID:-}
uid=${SLURM_JOB_UID:-}
what=${1:-${SLURM_SCRIPT_CONTEXT:-}}

# A job id as dynprof accepts it: 1-64 of [A-Za-z0-9._-], not starting with '.'.
[ "$(printf '%s' "$job" | wc -l)" -eq 0 ] || exit 0
printf '%s\n' "$job" | grep -Eqx '[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}' || exit 0

# The agent's --legacy-dir (either "--legacy-dir DIR" or "--legacy-dir=DIR").
dir=$( [ -r "$DEFAULTS" ] && . "$DEFAULTS" >/dev/null 2>&1
	printf ' %s \n' "${DYNPROF_AGENT_OPTS:-}" | tr '\t' ' ' |
	    sed -n 's/.* --legacy-dir[= ]\{1,\}\([^ ]\{1,\}\) .*/\1/p' )
[ -n "$dir" ] && [ -d "$dir" ] && [ ! -L "$dir" ] || exit 0
d="$dir/$job"

case "$what" in
prolog|prolog_slurmd)
	case "$uid" in
	""|*[!0-9]*) exit 0 ;;
	esac
	[ -e "$d" ] || [ -L "$d" ] && exit 0
	mkdir -m 2770 -- "$d" 2>/dev/null || exit 0
	chown "$uid:$(stat -c %g -- "$dir")" -- "$d" 2>/dev/null
	;;
epilog|epilog_slurmd)
	[ -d "$d" ] && [ ! -L "$d" ] || exit 0
	rm -rf -- "$d"
	;;
esac
exit 0
