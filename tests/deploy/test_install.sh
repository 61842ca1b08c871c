#!/bin/sh
# Installs the build tree into a temporary prefix, then builds a small program
# against the installed library with pkg-config and runs it.
#
# usage: test_install.sh BUILD_DIR CC [EXTRA_CFLAGS]
set -eu
build=$1
cc=$2
extra=${3:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynprof-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# The library's two install components: the runtime and the development files.
for comp in lib dev; do
	cmake --install "$build" --prefix "$tmp/prefix" --component "$comp" \
	    >>"$tmp/install.log" 2>&1 || {
		cat "$tmp/install.log"; echo "FAIL: cmake --install ($comp)"; exit 1; }
done

so=$(find "$tmp/prefix" -name 'libdynprof.so.0.1.0' | head -n 1)
[ -n "$so" ] || { echo "FAIL: libdynprof.so.0.1.0 not installed"; exit 1; }
libdir=$(dirname "$so")
[ -L "$libdir/libdynprof.so.0" ] && [ -L "$libdir/libdynprof.so" ] || {
	echo "FAIL: soname links missing"; exit 1; }
readelf -d "$so" | grep -q 'SONAME.*\[libdynprof\.so\.0\]' || {
	echo "FAIL: soname is not libdynprof.so.0"; exit 1; }
[ -f "$tmp/prefix/include/dynprof.h" ] || { echo "FAIL: header missing"; exit 1; }
if find "$tmp/prefix" -name 'libdynprof.h' -o -name 'segment.h' | grep -q .; then
	echo "FAIL: an internal header was installed"; exit 1
fi

export PKG_CONFIG_PATH="$libdir/pkgconfig"
pkg-config --exists dynprof || { echo "FAIL: pkg-config does not find dynprof"; exit 1; }
[ "$(pkg-config --modversion dynprof)" = 0.1.0 ] || { echo "FAIL: version"; exit 1; }

cat >"$tmp/user.c" <<'PROG'
#include <stdio.h>
#include <string.h>
#include <dynprof.h>

int
main(void)
{
	struct dynprof_params	 p;
	dynprof_t		*h;
	int64_t			 s;
	int			 rc;

	dynprof_params_init(&p);
	if ((rc = dynprof_open(&p, &h)) != DYNPROF_OK) {
		fprintf(stderr, "open: %s\n", dynprof_strerror(rc));
		return (1);
	}
	for (s = 1; s <= 1000; s++) {
		dynprof_step_begin(h, s);
		dynprof_step_end(h, s);
	}
	if (dynprof_current_step(h) != 1000 ||
	    strcmp(dynprof_job(h), "install-test") != 0 ||
	    dynprof_state(h) != DYNPROF_RANK_ATTACHED) {
		fprintf(stderr, "unexpected state\n");
		return (1);
	}
	dynprof_close(h);
	printf("ok %s\n", dynprof_version());
	return (0);
}
PROG
# shellcheck disable=SC2046,SC2086
"$cc" $extra -o "$tmp/user" "$tmp/user.c" $(pkg-config --cflags --libs dynprof) || {
	echo "FAIL: cannot build against the installed library"; exit 1; }
readelf -d "$tmp/user" | grep -q 'NEEDED.*\[libdynprof\.so\.0\]' || {
	echo "FAIL: program does not need libdynprof.so.0"; exit 1; }

out=$(LD_LIBRARY_PATH="$libdir" DYNPROF_JOB=install-test DYNPROF_SHM_DIR="$tmp" \
    DYNPROF_OUTPUT_ROOT="$tmp/out" DYNPROF_AGENT_SOCKET="$tmp/none.sock" \
    "$tmp/user") || { echo "FAIL: program failed"; exit 1; }
[ "$out" = "ok 0.1.0" ] || { echo "FAIL: program said '$out'"; exit 1; }
# It opened its segment (ok above); no agent served it: gone with it.
[ ! -e "$tmp/dynprof.install-test" ] || {
	echo "FAIL: the segment no agent served was left behind"; exit 1; }
echo "install test passed"
