#!/bin/sh
# dynprof SLURM Epilog (slurm.conf: Epilog=/etc/slurm/dynprof-epilog.sh, or call it
# from yours).  Optional: the agent removes a segment by itself --grace seconds (60)
# after its last process is gone; this removes the job's segment on this node as soon
# as the job ends.  slurmd runs it as root with SLURM_JOB_ID and SLURM_JOB_UID set.
# The segment is in the directory itself when nobody but its owner may write it, else
# in the job user's own directory there, dynprof-u<uid> (docs/segments.md).  A
# segment some process other than the agent still maps is left alone.  Never fails
# the job.

DEFAULTS=${DYNPROF_AGENT_DEFAULTS:-/etc/default/dynprof-agent}
job=${SLURM_JOB_ID:-}

# A job id as dynprof accepts it: 1-64 of [A-Za-z0-9._-], not starting with '.'.
case "$job" in
""|.*|*[!A-Za-z0-9._-]*) exit 0 ;;
esac
[ ${#job} -le 64 ] || exit 0

# The segment directory: the agent's --shm-dir, else the library's default.
dir=$(
	set -f
	DYNPROF_AGENT_OPTS=""
	[ -r "$DEFAULTS" ] && . "$DEFAULTS" >/dev/null 2>&1
	set -- $DYNPROF_AGENT_OPTS
	while [ $# -gt 0 ]; do
		case "$1" in
		--shm-dir) [ $# -gt 1 ] && printf '%s\n' "$2"; exit 0 ;;
		--shm-dir=*) printf '%s\n' "${1#*=}"; exit 0 ;;
		esac
		shift
	done
)
dir=${dir:-/dev/shm}
uid=${SLURM_JOB_UID:-}
case "$uid" in
""|*[!0-9]*) uid= ;;
esac

# Removes segment $1 unless a process of the job (a rank the epilog outlived) still
# maps it.  The agent's own mapping does not count: it lets go when the file is gone.
remove() {
	seg=$1
	[ -f "$seg" ] && [ ! -L "$seg" ] || return 0
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = dynprof-agent ] && continue
		if grep -qsF -- "$seg" "$p/maps"; then
			return 0
		fi
	done
	rm -f -- "$seg"
}

remove "$dir/dynprof.$job"
# The user's directory, only as a directory of that uid (never through a link).
udir="$dir/dynprof-u$uid"
if [ -n "$uid" ] && [ -d "$udir" ] && [ ! -L "$udir" ] &&
    [ "$(stat -c %u -- "$udir" 2>/dev/null)" = "$uid" ]; then
	remove "$udir/dynprof.$job"
fi
exit 0
